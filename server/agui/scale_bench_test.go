package agui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
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
// agent whose child streams scaleEvents stamped deltas, read by an HTTP
// client per run (aguiLoad).
//
// The client runs in a process of its own, the test binary re-executed
// (bench.StartLoad; AGENTPOOL_BENCH_CLIENT=inprocess runs it in this one,
// as before): a real client is another process, and 1,000 clients in the
// server's process make their goroutines (net/http's read and write loop
// per connection), allocations and heap the server's collector's work.
// The figures of this process are then the server's alone: the CPU time
// per event and per delta, the collector's cycles and CPU, the most
// goroutines, the peak resident set size during the op and the RSS after
// it (collected). The client's CPU per delta is reported beside them (0
// in process, where it is part of the server's), with the SSE events
// delivered per second and the p50/p99 latency from a delta's emit to the
// arrival at the client of the first activity update that holds it: the
// stamp is the wall clock of the server's process, read against the
// client's on the same machine.
func BenchmarkScale(b *testing.B) {
	for _, v := range []struct {
		name  string
		every time.Duration
	}{{"burst", 0}, {"paced-5ms", 5 * time.Millisecond}} {
		scale(b, scaleSessions, v.name, v.every)
	}
}

// BenchmarkScaleLight is BenchmarkScale's paced variant at a tenth of the
// runs (20,000 deltas/s offered), its client in its own process as
// there: below what saturates 2 cores, its latency is the delivery's own
// (the writer's cadence, the queue), which the full scale's p99 hides
// under the wait for CPU.
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
		load, err := bench.StartLoad("TestLoadClientProcess", aguiLoadParams{URL: "http://" + ln.Addr().String() + "/", Sessions: scaleSessions}, newAGUILoad)
		if err != nil {
			b.Fatal(err)
		}
		defer load.Kill()
		if _, err := load.Round(); err != nil { // warm up (connections, pools)
			b.Fatal(err)
		}
		if err := load.Discard(); err != nil {
			b.Fatal(err)
		}
		var (
			events, gs int
			peak, rss  uint64
			cpu, ccpu  time.Duration
			gc         bench.GC
		)
		b.ResetTimer()
		for b.Loop() {
			hp := bench.StartHeapPeak(time.Millisecond)
			cpu0, gc0 := bench.CPUTime(), bench.ReadGC()
			r, err := load.Round()
			cpu += bench.CPUTime() - cpu0
			g := bench.ReadGC().Sub(gc0)
			gc.Cycles, gc.CPU = gc.Cycles+g.Cycles, gc.CPU+g.CPU
			hp.Stop()
			if err != nil {
				b.Fatal(err)
			}
			events += r.Events
			ccpu += r.CPU
			peak, gs = max(peak, hp.PeakRSS()), max(gs, hp.PeakGoroutines())
		}
		b.StopTimer()
		lat, err := load.Latencies()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := load.Close(); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		rss = bench.RSSNow()
		if lat.N != b.N*scaleSessions*scaleEvents {
			b.Fatalf("%d latencies for %d deltas", lat.N, b.N*scaleSessions*scaleEvents)
		}
		b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event")
		// Per delta emitted: what the pipeline costs, however many of
		// them the server merged into one event.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(lat.N), "cpu-ns/delta")
		b.ReportMetric(float64(ccpu.Nanoseconds())/float64(lat.N), "client-cpu-ns/delta")
		// The collector's share: its cycles during the ops and its CPU
		// (the runtime's estimate) per delta, the part of cpu-ns/delta
		// that a smaller or less pointer-dense live heap and fewer
		// allocations cut.
		b.ReportMetric(float64(gc.Cycles)/float64(b.N), "gc/op")
		b.ReportMetric(float64(gc.CPU.Nanoseconds())/float64(lat.N), "gc-cpu-ns/delta")
		b.ReportMetric(float64(gs), "goroutines")
		b.ReportMetric(float64(lat.P50), "p50-ns")
		b.ReportMetric(float64(lat.P99), "p99-ns")
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
		b.ReportMetric(float64(rss)/(1<<20), "rss-after-MB")
	})
}

// TestLoadClientProcess is BenchmarkScale's client when the benchmark
// starts it in a process of its own (bench.StartLoad); otherwise it skips.
func TestLoadClientProcess(t *testing.T) {
	ok, err := bench.ServeLoad(newAGUILoad)
	if !ok {
		t.Skip("the scale benchmarks' load client, run by them")
	}
	if err != nil {
		t.Fatal(err)
	}
}

// aguiLoadParams are what aguiLoad needs: the server's URL and how many
// runs to start per round.
type aguiLoadParams struct {
	URL      string `json:"url"`
	Sessions int    `json:"sessions"`
}

// aguiLoad is BenchmarkScale's client: per round, one POST per run at
// once, each reading its run's event stream to RUN_FINISHED.
type aguiLoad struct {
	url      string
	sessions int
	client   *http.Client
	thread   int
	lats     []int64
}

func newAGUILoad(raw json.RawMessage) (bench.LoadClient, error) {
	var p aguiLoadParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return &aguiLoad{
		url:      p.URL,
		sessions: p.Sessions,
		client:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: p.Sessions, MaxConnsPerHost: p.Sessions}},
	}, nil
}

// one streams a run and returns its SSE events and delta latencies.
func (c *aguiLoad) one(id int) (int, []int64, error) {
	body := fmt.Sprintf(`{"threadId":"t-%d","runId":"r-%d","messages":[{"id":"m1","role":"user","content":"go"}]}`, id, id)
	resp, err := c.client.Post(c.url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	// The scanner's buffer starts small and grows to the longest
	// line: 1,000 streams that each started with 64 KB allocated a
	// third of the benchmark's bytes (when the client shared the
	// server's process, their GC was charged to the server's CPU).
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

// Setup: the runs need nothing before their round.
func (c *aguiLoad) Setup() error { return nil }

// Round starts c.sessions runs at once and reads each to its end.
func (c *aguiLoad) Round() (int, error) {
	var (
		mu     sync.Mutex
		total  int
		wg     sync.WaitGroup
		errOne error
	)
	for range c.sessions {
		c.thread++
		id := c.thread
		wg.Go(func() {
			n, lats, err := c.one(id)
			mu.Lock()
			defer mu.Unlock()
			total += n
			c.lats = append(c.lats, lats...)
			if err != nil && errOne == nil {
				errOne = err
			}
		})
	}
	wg.Wait()
	return total, errOne
}

func (c *aguiLoad) TakeLatencies() []int64 {
	l := c.lats
	c.lats = nil
	return l
}

func (c *aguiLoad) Close() error {
	c.client.CloseIdleConnections()
	return nil
}
