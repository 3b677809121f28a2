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
// delivery's).
//
// The client (ocLoad) runs in a process of its own, the test binary
// re-executed (bench.StartLoad; AGENTPOOL_BENCH_CLIENT=inprocess runs it
// in this one, as before): a real client is another process, and one in
// the server's process makes its goroutines, allocations and heap the
// server's collector's work. The figures of this process are then the
// server's alone: the CPU time per event and per delta, the collector's
// cycles and CPU, the most goroutines, the peak resident set size during
// the op and the RSS after it. The client's CPU per delta is reported
// beside them (0 in process, where it is part of the server's), with the
// SSE events delivered per second, the deltas delivered per op (fewer
// than emitted when the server coalesced those the client had not read
// yet) and the p50/p99 latency from a delta's emit (the oldest in a
// coalesced one) to its arrival on the event stream: the stamp is the
// wall clock of the server's process, read against the client's on the
// same machine.
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
// roots (20,000 deltas/s offered), its client in its own process as
// there: below what saturates 2 cores, its latency is the delivery's own
// (the stream's cadence, the queue).
func BenchmarkScaleLight(b *testing.B) {
	scale(b, scaleSessions/10, "paced-5ms", 5*time.Millisecond)
}

// contentionRoots root sessions are prompted at once by
// BenchmarkContention.
const contentionRoots = 32

// BenchmarkContention is BenchmarkScale's burst with contentionRoots
// roots: the load under which to take a mutex or block profile of the
// server (-mutexprofile), where every run's events meet the server's
// shared state. Its client runs in its own process too, so that the
// profile holds the server's locks alone.
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
		load, err := bench.StartLoad("TestLoadClientProcess", ocLoadParams{Base: "http://" + ln.Addr().String(), Sessions: scaleSessions}, newOCLoad)
		if err != nil {
			b.Fatal(err)
		}
		defer load.Kill()
		if err := load.Setup(); err != nil {
			b.Fatal(err)
		}
		if _, err := load.Round(); err != nil { // warm up
			b.Fatal(err)
		}
		if err := load.Discard(); err != nil {
			b.Fatal(err)
		}
		var (
			events, gs int
			peak       uint64
			cpu, ccpu  time.Duration
			gc         bench.GC
		)
		b.ResetTimer()
		for b.Loop() {
			b.StopTimer()
			if err := load.Setup(); err != nil {
				b.Fatal(err)
			}
			hp := bench.StartHeapPeak(time.Millisecond)
			b.StartTimer()
			cpu0, gc0 := bench.CPUTime(), bench.ReadGC()
			r, err := load.Round()
			cpu += bench.CPUTime() - cpu0
			g := bench.ReadGC().Sub(gc0)
			gc.Cycles, gc.CPU = gc.Cycles+g.Cycles, gc.CPU+g.CPU
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			events += r.Events
			ccpu += r.CPU
			hp.Stop()
			peak, gs = max(peak, hp.PeakRSS()), max(gs, hp.PeakGoroutines())
			b.StartTimer()
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
		if lat.N == 0 {
			b.Fatal("no stamped delta reached the event stream")
		}
		deltas := float64(b.N * scaleSessions * scaleEvents)
		b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event")
		// Per delta emitted: what the pipeline costs, however many of
		// them the server coalesced into one event.
		b.ReportMetric(float64(cpu.Nanoseconds())/deltas, "cpu-ns/delta")
		b.ReportMetric(float64(ccpu.Nanoseconds())/deltas, "client-cpu-ns/delta")
		b.ReportMetric(float64(lat.N)/float64(b.N), "deltas/op")
		// The collector's share: its cycles during the ops and its CPU
		// (the runtime's estimate) per delta, the part of cpu-ns/delta
		// that a smaller or less pointer-dense live heap and fewer
		// allocations cut.
		b.ReportMetric(float64(gc.Cycles)/float64(b.N), "gc/op")
		b.ReportMetric(float64(gc.CPU.Nanoseconds())/deltas, "gc-cpu-ns/delta")
		b.ReportMetric(float64(gs), "goroutines")
		b.ReportMetric(float64(lat.P50), "p50-ns")
		b.ReportMetric(float64(lat.P99), "p99-ns")
		b.ReportMetric(float64(peak)/(1<<20), "peak-rss-MB")
		b.ReportMetric(float64(bench.RSSNow())/(1<<20), "rss-after-MB")
	})
}

// TestLoadClientProcess is BenchmarkScale's client when the benchmark
// starts it in a process of its own (bench.StartLoad); otherwise it skips.
func TestLoadClientProcess(t *testing.T) {
	ok, err := bench.ServeLoad(newOCLoad)
	if !ok {
		t.Skip("the scale benchmarks' load client, run by them")
	}
	if err != nil {
		t.Fatal(err)
	}
}

// ocLoadParams are what ocLoad needs: the server's base URL and how many
// root sessions to prompt per round.
type ocLoadParams struct {
	Base     string `json:"base"`
	Sessions int    `json:"sessions"`
}

// ocLoad is BenchmarkScale's client: one event stream (GET /event, as the
// TUI), on which every data line is counted, deltas give latencies and
// the session.idle of a root ends its wait; and the POSTs that create the
// roots (Setup) and prompt them (Round).
type ocLoad struct {
	base     string
	sessions int
	client   *http.Client
	cancel   context.CancelFunc
	readDone chan struct{}
	idle     chan string
	roots    map[string]bool // created by Setup, for the next Round

	mu     sync.Mutex
	events int
	lats   []int64
}

func newOCLoad(raw json.RawMessage) (bench.LoadClient, error) {
	var p ocLoadParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	c := &ocLoad{
		base:     p.Base,
		sessions: p.Sessions,
		client:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: p.Sessions, MaxConnsPerHost: p.Sessions + 8}},
		readDone: make(chan struct{}),
		idle:     make(chan string, 4*p.Sessions),
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/event", nil)
	resp, err := c.client.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	go c.read(resp)
	return c, nil
}

func (c *ocLoad) read(resp *http.Response) {
	defer close(c.readDone)
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
		c.mu.Lock()
		c.events++
		if lat >= 0 {
			c.lats = append(c.lats, lat)
		}
		c.mu.Unlock()
		if bytes.Contains(line, []byte(`"session.idle"`)) {
			var e struct {
				Properties struct {
					SessionID string `json:"sessionID"`
				} `json:"properties"`
			}
			if json.Unmarshal(line[len("data: "):], &e) == nil {
				c.idle <- e.Properties.SessionID
			}
		}
	}
}

func (c *ocLoad) post(url, body string, want int) (string, error) {
	r, err := c.client.Post(url, "application/json", strings.NewReader(body))
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

// Setup creates the next round's root sessions.
func (c *ocLoad) Setup() error {
	c.roots = make(map[string]bool, c.sessions)
	for range c.sessions {
		out, err := c.post(c.base+"/session", "{}", http.StatusOK)
		if err != nil {
			return err
		}
		var s struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil || s.ID == "" {
			return fmt.Errorf("session: %v %.200s", err, out)
		}
		c.roots[s.ID] = true
	}
	return nil
}

// Round prompts every root Setup created at once and waits until each is
// idle.
func (c *ocLoad) Round() (int, error) {
	roots := c.roots
	c.roots = nil
	var wg sync.WaitGroup
	errs := make(chan error, len(roots))
	for sid := range roots {
		wg.Go(func() {
			if _, err := c.post(c.base+"/session/"+sid+"/prompt_async", `{"parts":[{"type":"text","text":"go"}]}`, http.StatusNoContent); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	left := len(roots)
	timeout := time.After(5 * time.Minute)
	for left > 0 {
		select {
		case sid := <-c.idle:
			if roots[sid] {
				delete(roots, sid)
				left--
			}
		case <-c.readDone:
			return 0, fmt.Errorf("the event stream ended with %d roots not idle (cut off as too slow? the server logs it)", left)
		case <-timeout:
			return 0, fmt.Errorf("%d roots never idle", left)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.events
	c.events = 0
	return n, nil
}

func (c *ocLoad) TakeLatencies() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lats
	c.lats = nil
	return l
}

func (c *ocLoad) Close() error {
	c.cancel()
	<-c.readDone
	c.client.CloseIdleConnections()
	return nil
}
