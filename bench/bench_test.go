package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// The benchmarks. Figures in BENCHMARKS.md come from `make bench`.

// pipelineEvents is how many part_delta events a pipeline child emits per op.
const pipelineEvents = 1000

// storeKinds are the stores the store-dependent benchmarks run on.
func storeKinds() []string { return []string{"memory", "sqlite"} }

// openStore opens a store of the given kind in a temporary directory; it
// skips the benchmark when the kind is not available yet.
func openStore(b *testing.B, kind string) session.Store {
	b.Helper()
	switch kind {
	case "memory":
		return memory.New()
	case "sqlite":
		if OpenSQLite == nil {
			b.Skip("pending: package session/sqlite is not available yet (set bench.OpenSQLite in sqlite.go)")
		}
		st, err := OpenSQLite(filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	case "postgres":
		if OpenPostgres == nil {
			b.Skip("pending: package session/postgres is not available (set bench.OpenPostgres in postgres.go)")
		}
		// A fresh schema; commits wait for the disk, as by default
		// (BENCH_PG_SYNC=off: they do not, to see what the disk costs).
		name, _ := pgtest.Schema(b)
		sync := cmp.Or(os.Getenv("BENCH_PG_SYNC"), "on")
		st, err := OpenPostgres(pgtest.WithParam(pgtest.URL(b), "synchronous_commit", sync), name)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}
	b.Fatalf("unknown store %q", kind)
	return nil
}

// BenchmarkDelegatedCall is one delegated call: parent -> ask_worker ->
// worker (own child session, full lifecycle) -> parent answers; every event
// consumed. The pool is built once and reused. store=postgres needs the
// server of AGENTPOOL_TEST_POSTGRES (tests/pg/start.sh), else it skips.
func BenchmarkDelegatedCall(b *testing.B) {
	for _, kind := range append(storeKinds(), "postgres") {
		b.Run("store="+kind, func(b *testing.B) {
			d, err := NewDelegated(openStore(b, kind))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := d.Run(ctx); err != nil { // warm up
				b.Fatal(err)
			}
			d.Sink.Reset()
			b.ReportAllocs()
			cpu := CPUTime()
			for b.Loop() {
				if err := d.Run(ctx); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, CPUTime()-cpu)
			b.ReportMetric(float64(d.Sink.N)/float64(b.N), "events/op")
		})
	}
}

// BenchmarkEventPipeline measures wrapped child events per second: a child
// spawned with spawn.Spawn emits 1000 part_delta events that reach the root
// consumer wrapped once.
//
//   - bare/depth=N: the spawn primitive and its wrapper only, the emitter
//     N levels below the root (no processor, nothing stored);
//   - bare+processor/lean/depth=1: the same, with the root stream going
//     through a processor.Recorder nobody watches (each event appended to
//     the memory store), as the pool does without protocol clients;
//   - bare+processor/projected/depth=1: the same with a watching
//     processor.Projection and one subscriber, so the session tree is
//     projected and its Changes are delivered (the pool's path under an
//     OpenCode server);
//   - pool/store=S: the full pool path (agent loop and tool -> spawn ->
//     wrapper -> recorder -> store S -> consumer).
func BenchmarkEventPipeline(b *testing.B) {
	for _, depth := range []int{1, 3} {
		b.Run(fmt.Sprintf("bare/depth=%d", depth), func(b *testing.B) {
			var c Counter
			p, err := NewBarePipeline(pipelineEvents, depth, &c, NoProcessor, nil)
			if err != nil {
				b.Fatal(err)
			}
			benchPipeline(b, p.Run, &c)
		})
	}
	for _, mode := range []struct {
		name string
		mode ProcessorMode
	}{{"lean", Lean}, {"projected", Projected}} {
		b.Run("bare+processor/"+mode.name+"/depth=1", func(b *testing.B) {
			var c Counter
			var changes atomic.Int64
			p, err := NewBarePipeline(pipelineEvents, 1, &c, mode.mode, &changes)
			if err != nil {
				b.Fatal(err)
			}
			benchPipeline(b, p.Run, &c, func() { changes.Store(0) })
			if mode.mode == Projected {
				b.ReportMetric(float64(changes.Load())/float64(b.N), "changes/op")
			}
		})
	}
	for _, kind := range storeKinds() {
		b.Run("pool/store="+kind, func(b *testing.B) {
			var c Counter
			p, err := NewPoolPipeline(openStore(b, kind), pipelineEvents, &c)
			if err != nil {
				b.Fatal(err)
			}
			benchPipeline(b, p.Run, &c)
		})
	}
}

// reportCPU reports the process CPU time per op (user + system, every
// goroutine including the garbage collector's): on a shared machine it
// estimates the work better than ns/op, which also counts time other
// processes held the cores. On 2 cores a parallel workload can finish in
// about half its CPU time.
func reportCPU(b *testing.B, cpu time.Duration) {
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// benchPipeline runs run once to warm up, then resets c and calls each
// reset, then measures.
func benchPipeline(b *testing.B, run func(context.Context) error, c *Counter, reset ...func()) {
	ctx := context.Background()
	if err := run(ctx); err != nil {
		b.Fatal(err)
	}
	c.Reset()
	for _, r := range reset {
		r()
	}
	b.ReportAllocs()
	cpu := CPUTime()
	for b.Loop() {
		if err := run(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cpu = CPUTime() - cpu
	reportCPU(b, cpu)
	if cpu > 0 {
		b.ReportMetric(float64(c.Wrapped)/cpu.Seconds(), "cpu-events/s")
	}
	// Every wrapped event counts (the emitter's own, and at depth > 1 the
	// relays'); the root's own events do not.
	b.ReportMetric(float64(c.Wrapped)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(c.Wrapped), "ns/event")
}

// BenchmarkFanOut runs a root parallel team of N scripted members, all at
// once (max_children = N). It reports the time per member and the peak
// heap of a run: HeapAlloc sampled every millisecond from a GC'd start
// (peak-heap-MB) and its growth over that start (heap-growth-MB). Each
// run's sessions are deleted after it, outside the timer. For N >= 1000
// every timed run is sampled; for smaller N one extra run after the timed
// ones is (a GC per tiny run would dominate the benchmark's wall time).
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			st := memory.New()
			p, err := NewPool("team.yaml", TeamYAML(n), st)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var c Counter
			var cpu time.Duration // CPU time of the timed runs
			run := func() string {
				sid, err := RunNode(ctx, p, "crew", &c)
				if err != nil {
					b.Fatal(err)
				}
				return sid
			}
			timedRun := func() string {
				c0 := CPUTime()
				sid := run()
				cpu += CPUTime() - c0
				return sid
			}
			del := func(sid string) {
				if err := st.DeleteSession(ctx, sid); err != nil {
					b.Fatal(err)
				}
			}
			var peak, growth uint64
			sampled := func(timed bool) {
				runtime.GC()
				base := HeapNow()
				hp := StartHeapPeak(time.Millisecond)
				var sid string
				if timed {
					b.StartTimer()
					sid = timedRun()
					b.StopTimer()
				} else {
					sid = run()
				}
				pk := hp.Stop()
				peak, growth = max(peak, pk), max(growth, pk-min(base, pk))
				del(sid)
			}
			del(run()) // warm up
			b.ReportAllocs()
			for b.Loop() {
				if n >= 1000 {
					b.StopTimer()
					sampled(true)
					b.StartTimer()
					continue
				}
				sid := timedRun()
				b.StopTimer()
				del(sid)
				b.StartTimer()
			}
			elapsed, iters := b.Elapsed(), b.N
			if n < 1000 {
				sampled(false)
			}
			reportCPU(b, cpu)
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(iters*n), "ns/member")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(growth)/(1<<20), "heap-growth-MB")
		})
	}
}

// BenchmarkTeamStore runs a root parallel team of N scripted members on
// each store, the memory store first, so that the SQLite figures come with
// their reference from the same run (the report gives the ratio). Each
// run starts from a collected heap with the freed memory returned to the
// system; it reports the time per member, the peak Go heap and the peak
// resident set size of the process (peak-rss-MB: it also counts the SQLite
// page cache, which is outside the Go heap). Each run's sessions are
// deleted after it, outside the timer.
func BenchmarkTeamStore(b *testing.B) {
	for _, n := range []int{2000, 10000} {
		for _, kind := range storeKinds() {
			b.Run(fmt.Sprintf("members=%d/store=%s", n, kind), func(b *testing.B) {
				st := openStore(b, kind)
				p, err := NewPool("team.yaml", TeamYAML(n), st)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				var c Counter
				run := func() string {
					sid, err := RunNode(ctx, p, "crew", &c)
					if err != nil {
						b.Fatal(err)
					}
					return sid
				}
				del := func(sid string) {
					if err := st.DeleteSession(ctx, sid); err != nil {
						b.Fatal(err)
					}
				}
				del(run()) // warm up
				var cpu time.Duration
				var peak, rss uint64
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					debug.FreeOSMemory()
					hp := StartHeapPeak(time.Millisecond)
					c0 := CPUTime()
					b.StartTimer()
					sid := run()
					b.StopTimer()
					cpu += CPUTime() - c0
					peak = max(peak, hp.Stop())
					rss = max(rss, hp.PeakRSS())
					del(sid)
					b.StartTimer()
				}
				reportCPU(b, cpu)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/member")
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
				b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MB")
			})
		}
	}
}

// BenchmarkDepth runs a chain a0 -> a1 -> ... of depth 1 to 5, each agent
// asking the next through its worker tool.
func BenchmarkDepth(b *testing.B) {
	for depth := 1; depth <= 5; depth++ {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			p, err := NewPool("chain.yaml", ChainYAML(depth), nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var c Counter
			if _, err := RunNode(ctx, p, "a0", &c); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			cpu := CPUTime()
			for b.Loop() {
				if _, err := RunNode(ctx, p, "a0", &c); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, CPUTime()-cpu)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*depth), "ns/level")
		})
	}
}

// BenchmarkEmitLatency measures the latency from a child's Emit to the
// root consumer receiving the event (through wrapper, recorder and memory
// store), with 1 child emitting 1000 events and with 1000 concurrent
// children emitting 10 each. p50/p99 over every event of every run.
func BenchmarkEmitLatency(b *testing.B) {
	for _, tc := range []struct{ k, m int }{{1, 1000}, {1000, 10}} {
		b.Run(fmt.Sprintf("children=%d", tc.k), func(b *testing.B) {
			l, err := NewLatency(nil, tc.k, tc.m)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := l.Run(ctx); err != nil {
				b.Fatal(err)
			}
			l.ResetSamples()
			b.ReportAllocs()
			for b.Loop() {
				if err := l.Run(ctx); err != nil {
					b.Fatal(err)
				}
			}
			ps, _ := l.Percentiles(50, 99)
			b.ReportMetric(ps[0], "p50-ns")
			b.ReportMetric(ps[1], "p99-ns")
		})
	}
}

// BenchmarkPersistEvents appends events to a store's log, in batches of
// one (as the recorder does) and of 100, then flushes: persisted events/s.
func BenchmarkPersistEvents(b *testing.B) {
	for _, kind := range storeKinds() {
		for _, batch := range []int{1, 100} {
			b.Run(fmt.Sprintf("store=%s/batch=%d", kind, batch), func(b *testing.B) {
				st := openStore(b, kind)
				ctx := context.Background()
				sid := "ses_bench"
				if err := st.CreateSession(ctx, session.Session{ID: sid, AgentName: "bench", SourceType: event.SourceAgent, Status: session.StatusRunning}); err != nil {
					b.Fatal(err)
				}
				evs := make([]event.Event, batch)
				for i := range evs {
					evs[i] = event.Subagent{
						SourceName: "worker", SourceType: event.SourceAgent, Depth: 1,
						ChildSessionID: "ses_child", ParentSessionID: sid, Path: []string{"ses_child"},
						Event: event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "token "}},
					}
				}
				// A classic loop, so that the final Flush is timed too.
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := st.AppendEvents(ctx, sid, evs...); err != nil {
						b.Fatal(err)
					}
				}
				if err := st.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// BenchmarkContention runs N root runs at once on one pool, each spawning
// an emitter of pipelineEvents part_delta events, with the pool's
// processor watched by a processor.Projection that has one subscriber
// (the path under an OpenCode or AG-UI server). One op is all N runs, to
// their ends. Run it with -mutexprofile to see which locks the roots
// share.
func BenchmarkContention(b *testing.B) {
	for _, n := range []int{32} {
		b.Run(fmt.Sprintf("roots=%d", n), func(b *testing.B) {
			c, err := NewContention(n, pipelineEvents)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := c.Run(ctx); err != nil { // warm up
				b.Fatal(err)
			}
			c.Reset()
			b.ReportAllocs()
			cpu := CPUTime()
			for b.Loop() {
				if err := c.Run(ctx); err != nil {
					b.Fatal(err)
				}
			}
			cpu = CPUTime() - cpu
			reportCPU(b, cpu)
			wrapped := c.Wrapped()
			b.ReportMetric(float64(wrapped)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(c.Changes.Load())/float64(b.N), "changes/op")
		})
	}
}
