package agui

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/bench"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
)

// scaleSessions and scaleEvents size BenchmarkScale: that many concurrent
// runs (one thread each), each streaming that many stamped text deltas.
// The burst variant emits them as fast as it can (throughput; its latency
// is mostly how long a delta waits behind its run's burst); the paced one
// emits one every 5 ms (a model streaming 200 tokens/s): 200,000 deltas/s
// offered in all, the goal of issue 25. A child's text reaches the client
// as appends to its activity message's content (activity.go): each delta
// at once, joined with those the writer has not taken yet.
const (
	scaleSessions = 1000
	scaleEvents   = 200
)

// stampOp begins the JSON Patch op of a subagent's activity that appends
// text to its first message (the stamper's only one) (activity.go).
const stampOp = `{"op":"add","path":"/messages/0/content/-","value":"`

// stamper emits n text deltas, one every every, whose text is its emit
// time (Unix ns) and a space, so that the client measures each delta's
// delivery latency, also of deltas the server merged into one event.
type stamper struct {
	n     int
	every time.Duration
}

func (s *stamper) Name() string                 { return "stamper" }
func (s *stamper) Description() string          { return "emits stamped deltas" }
func (s *stamper) SourceType() event.SourceType { return event.SourceAgent }
func (s *stamper) ModelID() string              { return "" }

func (s *stamper) Run(_ context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: "stamper", ParentSessionID: inv.Session.ParentID})
	var tick <-chan time.Time
	if s.every > 0 {
		t := time.NewTicker(s.every)
		defer t.Stop()
		tick = t.C
	}
	for range s.n {
		if tick != nil {
			<-tick
		}
		stamp := append(strconv.AppendInt(make([]byte, 0, 24), time.Now().UnixNano(), 10), ' ')
		inv.Sink.Emit(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: string(stamp)}})
	}
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done", FinishReason: "stop"}})
	return spawn.Result{Output: "done", StopReason: event.StopCompleted}
}

// benchFlush is the FlushInterval of BenchmarkScale's server: the
// default, or AGENTPOOL_BENCH_FLUSH (a duration; negative: none), so that
// one test binary compares write cadences.
func benchFlush(b *testing.B) time.Duration {
	v := os.Getenv("AGENTPOOL_BENCH_FLUSH")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d == 0 {
		b.Fatalf("AGENTPOOL_BENCH_FLUSH=%q: want a duration other than 0", v)
	}
	return d
}

// BenchmarkScale runs scaleSessions runs at once through the AG-UI server
// on a loopback socket (Serve, MaxConns raised to fit them), each a root
// agent whose child streams scaleEvents stamped deltas (paced), read by an HTTP
// client per run. It reports the SSE events delivered per second, the
// p50/p99 latency from a delta's emit to the arrival at the client of the
// first activity update that holds it, the peak resident set size during
// the op and the RSS after it (collected).
func BenchmarkScale(b *testing.B) {
	for _, v := range []struct {
		name  string
		every time.Duration
	}{{"burst", 0}, {"paced-5ms", 5 * time.Millisecond}} {
		scale(b, scaleSessions, v.name, v.every)
	}
}

// BenchmarkScaleLight is BenchmarkScale's paced variant at a tenth of the
// runs (20,000 deltas/s offered): below what saturates 2 cores, its
// latency is the delivery's own (the writer's cadence, the queue), which
// the full scale's p99 hides under the wait for CPU.
func BenchmarkScaleLight(b *testing.B) {
	scale(b, scaleSessions/10, "paced-5ms", 5*time.Millisecond)
}

func scale(b *testing.B, sessions int, name string, every time.Duration) {
	scaleSessions := sessions
	b.Run(fmt.Sprintf("agui/sessions=%d/%s", scaleSessions, name), func(b *testing.B) {
		p, err := bench.NewSpawnerPool(nil, []spawn.Node{&stamper{n: scaleEvents, every: every}})
		if err != nil {
			b.Fatal(err)
		}
		srv := New(p, Options{MaxConns: scaleSessions + 16, MaxThreads: 4 * scaleSessions, FlushInterval: benchFlush(b)})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, ln) }()
		defer func() {
			cancel()
			if err := <-served; err != nil {
				b.Error(err)
			}
		}()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: scaleSessions, MaxConnsPerHost: scaleSessions}}
		defer client.CloseIdleConnections()
		url := "http://" + ln.Addr().String() + "/"
		thread := 0
		// one streams a run and returns its SSE events and delta latencies.
		one := func(id int) (int, []int64, error) {
			body := fmt.Sprintf(`{"threadId":"t-%d","runId":"r-%d","messages":[{"id":"m1","role":"user","content":"go"}]}`, id, id)
			resp, err := client.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				return 0, nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return 0, nil, fmt.Errorf("status %d", resp.StatusCode)
			}
			// The scanner's buffer starts small and grows to the longest
			// line: 1,000 streams that each started with 64 KB allocated a
			// third of the benchmark's bytes, and their GC was charged to
			// the server's CPU per delta.
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
			events, lats := 0, make([]int64, 0, scaleEvents)
			finished, last := false, int64(0)
			for sc.Scan() {
				line := sc.Bytes()
				if !bytes.HasPrefix(line, []byte("data: ")) {
					continue
				}
				events++
				if bytes.Contains(line, []byte(`"RUN_FINISHED"`)) {
					finished = true
				}
				// The child's text is its activity message's first
				// message (the root's text is no stamp), to which each
				// op appends the deltas that arrive now, one latency
				// each, in emit order. An unescaped quote is JSON
				// structure, so the op is found by bytes.
				for rest := line; ; {
					i := bytes.Index(rest, []byte(stampOp))
					if i < 0 {
						break
					}
					if !bytes.Contains(line, []byte(`"type":"ACTIVITY_DELTA"`)) || !bytes.Contains(line, []byte(`"subagentRunId"`)) {
						return events, lats, fmt.Errorf("run %d: a text op outside a subagent's ACTIVITY_DELTA: %s", id, line)
					}
					text := rest[i+len(stampOp):]
					j := bytes.IndexByte(text, '"')
					if j < 0 || j == 0 || text[j-1] != ' ' {
						return events, lats, fmt.Errorf("run %d: not whole stamps: %s", id, line)
					}
					text, rest = text[:j], text[j:]
					now := time.Now().UnixNano()
					for f := range bytes.FieldsSeq(text) {
						ns, err := strconv.ParseInt(string(f), 10, 64)
						if err != nil || ns < last {
							return events, lats, fmt.Errorf("run %d: delta %q out of order or not a stamp (after %d)", id, f, last)
						}
						last = ns
						lats = append(lats, now-ns)
					}
				}
			}
			if err := sc.Err(); err != nil {
				return events, lats, err
			}
			if !finished {
				return events, lats, fmt.Errorf("run %d: no RUN_FINISHED", id)
			}
			if len(lats) != scaleEvents {
				return events, lats, fmt.Errorf("run %d: %d deltas delivered, want %d", id, len(lats), scaleEvents)
			}
			return events, lats, nil
		}
		round := func() (int, []int64) {
			var (
				mu     sync.Mutex
				total  int
				all    []int64
				wg     sync.WaitGroup
				errOne error
			)
			for range scaleSessions {
				thread++
				id := thread
				wg.Go(func() {
					n, lats, err := one(id)
					mu.Lock()
					defer mu.Unlock()
					total += n
					all = append(all, lats...)
					if err != nil && errOne == nil {
						errOne = err
					}
				})
			}
			wg.Wait()
			if errOne != nil {
				b.Fatal(errOne)
			}
			return total, all
		}
		round() // warm up (connections, pools)
		var (
			events    int
			lats      []int64
			peak, rss uint64
			cpu       time.Duration
			gc        bench.GC
		)
		b.ResetTimer()
		for b.Loop() {
			hp := bench.StartHeapPeak(time.Millisecond)
			cpu0, gc0 := bench.CPUTime(), bench.ReadGC()
			n, l := round()
			cpu += bench.CPUTime() - cpu0
			g := bench.ReadGC().Sub(gc0)
			gc.Cycles, gc.CPU = gc.Cycles+g.Cycles, gc.CPU+g.CPU
			hp.Stop()
			events += n
			lats = append(lats, l...)
			peak = max(peak, hp.PeakRSS())
		}
		b.StopTimer()
		runtime.GC()
		rss = bench.RSSNow()
		if len(lats) != b.N*scaleSessions*scaleEvents {
			b.Fatalf("%d latencies for %d deltas", len(lats), b.N*scaleSessions*scaleEvents)
		}
		slices.Sort(lats)
		pct := func(q float64) float64 { return float64(lats[int(q*float64(len(lats)-1))]) }
		b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event")
		// Per delta emitted: what the pipeline costs, however many of
		// them the server merged into one event.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(len(lats)), "cpu-ns/delta")
		// The collector's share: its cycles during the ops and its CPU
		// (the runtime's estimate) per delta, the part of cpu-ns/delta
		// that a smaller or less pointer-dense live heap and fewer
		// allocations cut.
		b.ReportMetric(float64(gc.Cycles)/float64(b.N), "gc/op")
		b.ReportMetric(float64(gc.CPU.Nanoseconds())/float64(len(lats)), "gc-cpu-ns/delta")
		b.ReportMetric(pct(0.50), "p50-ns")
		b.ReportMetric(pct(0.99), "p99-ns")
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
		b.ReportMetric(float64(rss)/(1<<20), "rss-after-MB")
	})
}
