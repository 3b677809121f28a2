package opencode

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

// scaleSessions root sessions are prompted at once by BenchmarkScale; the
// child of each streams scaleEvents stamped text deltas.
const (
	scaleSessions = 1000
	scaleEvents   = 200
)

// stamper emits n text deltas whose text is its emit time (Unix ns) and a
// space, one every every (0: as fast as it can): the server coalesces the
// deltas a lagging client has not read yet, and the first stamp of a
// coalesced delta is its oldest.
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
		// One string per delta, as a model's token (not a number's
		// string and then its concatenation).
		stamp := append(strconv.AppendInt(make([]byte, 0, 24), time.Now().UnixNano(), 10), ' ')
		inv.Sink.Emit(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: string(stamp)}})
	}
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done", FinishReason: "stop"}})
	return spawn.Result{Output: "done", StopReason: event.StopCompleted}
}

// BenchmarkScale prompts scaleSessions root sessions at once through the
// OpenCode server on a loopback socket (Serve), with one client on the
// event stream (GET /event, as the TUI), and reads until every root is
// idle. Per op: new sessions (outside the timer), one prompt_async each.
// The child of each root streams its deltas as fast as it can (burst:
// throughput; a delta's latency there is mostly its wait behind 1,000
// runs that never block) or one every 5 ms (paced: 200,000 deltas/s
// offered, a model streaming 200 tokens/s per run; the latency is the
// delivery's). It reports the SSE events delivered per second, the CPU
// time of the process (server and client) per event, the deltas
// delivered per op (fewer than emitted when the server coalesced those
// the client had not read yet), the p50/p99 latency from a delta's emit
// (the oldest in a coalesced one) to its arrival on the event stream,
// and the peak resident set size during the op and the RSS after it.
func BenchmarkScale(b *testing.B) {
	for _, v := range []struct {
		name  string
		every time.Duration
	}{{"burst", 0}, {"paced-5ms", 5 * time.Millisecond}} {
		scale(b, scaleSessions, v.name, v.every)
	}
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

// BenchmarkScaleLight is BenchmarkScale's paced variant at a tenth of the
// roots (20,000 deltas/s offered): below what saturates 2 cores, its
// latency is the delivery's own (the stream's cadence, the queue).
func BenchmarkScaleLight(b *testing.B) {
	scale(b, scaleSessions/10, "paced-5ms", 5*time.Millisecond)
}

// contentionRoots root sessions are prompted at once by
// BenchmarkContention.
const contentionRoots = 32

// BenchmarkContention is BenchmarkScale's burst with contentionRoots
// roots: the load under which to take a mutex or block profile of the
// server (-mutexprofile), where every run's events meet the server's
// shared state.
func BenchmarkContention(b *testing.B) {
	scale(b, contentionRoots, "burst", 0)
}

func scale(b *testing.B, sessions int, name string, every time.Duration) {
	scaleSessions := sessions
	b.Run(fmt.Sprintf("opencode/sessions=%d/%s", scaleSessions, name), func(b *testing.B) {
		p, err := bench.NewSpawnerPool(nil, []spawn.Node{&stamper{n: scaleEvents, every: every}})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		srv := New(p, Options{Directory: "/work/project", Version: "bench", MaxConns: scaleSessions + 16, FlushInterval: benchFlush(b)})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, ln) }()
		defer func() {
			cancel()
			<-served
		}()
		base := "http://" + ln.Addr().String()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: scaleSessions, MaxConnsPerHost: scaleSessions + 8}}
		defer client.CloseIdleConnections()

		// The event stream: every data line is counted; deltas give
		// latencies; the session.idle of a root is sent on idle.
		evCtx, evCancel := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(evCtx, http.MethodGet, base+"/event", nil)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var (
			mu     sync.Mutex
			events int
			lats   []int64
		)
		idle := make(chan string, 4*scaleSessions)
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
			for sc.Scan() {
				line := sc.Bytes()
				if !bytes.HasPrefix(line, []byte("data: ")) {
					continue
				}
				now := time.Now().UnixNano()
				var lat int64 = -1
				if bytes.Contains(line, []byte(`"message.part.delta"`)) {
					if i := bytes.Index(line, []byte(`"delta":"`)); i >= 0 {
						rest := line[i+len(`"delta":"`):]
						if j := bytes.IndexByte(rest, ' '); j > 0 {
							if ns, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
								lat = now - ns
							}
						}
					}
				}
				mu.Lock()
				events++
				if lat >= 0 {
					lats = append(lats, lat)
				}
				mu.Unlock()
				if bytes.Contains(line, []byte(`"session.idle"`)) {
					var e struct {
						Properties struct {
							SessionID string `json:"sessionID"`
						} `json:"properties"`
					}
					if json.Unmarshal(line[len("data: "):], &e) == nil {
						idle <- e.Properties.SessionID
					}
				}
			}
		}()
		defer func() {
			evCancel()
			<-readDone
		}()

		post := func(url, body string, want int) (string, error) {
			r, err := client.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				return "", err
			}
			defer r.Body.Close()
			var out bytes.Buffer
			out.ReadFrom(r.Body)
			if r.StatusCode != want {
				return "", fmt.Errorf("POST %s: %d %.200s", url, r.StatusCode, out.String())
			}
			return out.String(), nil
		}
		newRoots := func() map[string]bool {
			roots := make(map[string]bool, scaleSessions)
			for range scaleSessions {
				out, err := post(base+"/session", "{}", http.StatusOK)
				if err != nil {
					b.Fatal(err)
				}
				var s struct {
					ID string `json:"id"`
				}
				if err := json.Unmarshal([]byte(out), &s); err != nil || s.ID == "" {
					b.Fatalf("session: %v %.200s", err, out)
				}
				roots[s.ID] = true
			}
			return roots
		}
		round := func(roots map[string]bool) {
			var wg sync.WaitGroup
			errs := make(chan error, scaleSessions)
			for sid := range roots {
				wg.Go(func() {
					if _, err := post(base+"/session/"+sid+"/prompt_async", `{"parts":[{"type":"text","text":"go"}]}`, http.StatusNoContent); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			left := len(roots)
			timeout := time.After(5 * time.Minute)
			for left > 0 {
				select {
				case sid := <-idle:
					if roots[sid] {
						delete(roots, sid)
						left--
					}
				case <-readDone:
					b.Fatalf("the event stream ended with %d roots not idle (cut off as too slow? the server logs it)", left)
				case <-timeout:
					b.Fatalf("%d roots never idle", left)
				}
			}
		}
		round(newRoots()) // warm up
		mu.Lock()
		events, lats = 0, lats[:0]
		mu.Unlock()
		var (
			peak uint64
			cpu  time.Duration
			gc   bench.GC
		)
		b.ResetTimer()
		for b.Loop() {
			b.StopTimer()
			roots := newRoots()
			hp := bench.StartHeapPeak(time.Millisecond)
			b.StartTimer()
			cpu0, gc0 := bench.CPUTime(), bench.ReadGC()
			round(roots)
			cpu += bench.CPUTime() - cpu0
			g := bench.ReadGC().Sub(gc0)
			gc.Cycles, gc.CPU = gc.Cycles+g.Cycles, gc.CPU+g.CPU
			b.StopTimer()
			hp.Stop()
			peak = max(peak, hp.PeakRSS())
			b.StartTimer()
		}
		b.StopTimer()
		runtime.GC()
		mu.Lock()
		defer mu.Unlock()
		if len(lats) == 0 {
			b.Fatal("no stamped delta reached the event stream")
		}
		slices.Sort(lats)
		pct := func(q float64) float64 { return float64(lats[int(q*float64(len(lats)-1))]) }
		b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event")
		// Per delta emitted: what the pipeline costs, however many of
		// them the server coalesced into one event.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*scaleSessions*scaleEvents), "cpu-ns/delta")
		b.ReportMetric(float64(len(lats))/float64(b.N), "deltas/op")
		// The collector's share: its cycles during the ops and its CPU
		// (the runtime's estimate) per delta, the part of cpu-ns/delta
		// that a smaller or less pointer-dense live heap and fewer
		// allocations cut.
		b.ReportMetric(float64(gc.Cycles)/float64(b.N), "gc/op")
		b.ReportMetric(float64(gc.CPU.Nanoseconds())/float64(b.N*scaleSessions*scaleEvents), "gc-cpu-ns/delta")
		b.ReportMetric(pct(0.50), "p50-ns")
		b.ReportMetric(pct(0.99), "p99-ns")
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
		b.ReportMetric(float64(bench.RSSNow())/(1<<20), "rss-after-MB")
	})
}
