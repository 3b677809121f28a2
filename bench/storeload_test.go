package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
)

// Store load: storeLoadRoots root runs at once on one pool, each a
// parallel team of storeLoadFanOut scripted members, on SQLite and then on
// PostgreSQL (issue 39 item 2).
const (
	storeLoadRoots  = 32
	storeLoadFanOut = 100
	storeLoadApp    = "agentpool-bench-storeload"
)

// commitSamples keeps the commit latencies a store reports.
type commitSamples struct {
	mu sync.Mutex
	d  []time.Duration
}

func (c *commitSamples) add(d time.Duration) {
	c.mu.Lock()
	c.d = append(c.d, d)
	c.mu.Unlock()
}

func (c *commitSamples) reset() {
	c.mu.Lock()
	c.d = c.d[:0]
	c.mu.Unlock()
}

// percentile returns the p-th percentile (0-100) of the samples.
func (c *commitSamples) percentile(p float64) time.Duration {
	c.mu.Lock()
	s := slices.Clone(c.d)
	c.mu.Unlock()
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

const mutexWait = "/sync/mutex/wait/total:seconds"

// mutexWaitNow is the time goroutines of this process have spent blocked
// on a sync.Mutex or RWMutex so far (runtime/metrics).
func mutexWaitNow() float64 {
	s := []metrics.Sample{{Name: mutexWait}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return s[0].Value.Float64()
}

// BenchmarkStoreLoad runs 32 root runs at once on one pool, each a
// parallel team of 100 scripted members (3,200 child sessions per op), on
// the SQLite store and then on PostgreSQL (the server of
// AGENTPOOL_TEST_POSTGRES, commits that wait for the disk; skipped without
// it). It reports the events stored per second (every event of the run
// is appended once), the p50 and p99 commit latency of an append (from the
// AppendEvents call to its commit: the stores' CommitLatency option), the
// time this process's goroutines waited on Go mutexes (mutex-wait-ms/op),
// and on PostgreSQL the lock waits of the database's backends, sampled
// from pg_stat_activity every 5 ms (the share of active backends waiting
// on a heavyweight lock, and on an internal LWLock) and the deadlocks
// pg_stat_database counted. Each op's sessions are deleted after it,
// outside the timer.
func BenchmarkStoreLoad(b *testing.B) {
	for _, kind := range []string{"sqlite", "postgres"} {
		b.Run(fmt.Sprintf("roots=%d/fanout=%d/store=%s", storeLoadRoots, storeLoadFanOut, kind), func(b *testing.B) {
			var lat commitSamples
			var st session.Store
			var pgURL string
			var err error
			switch kind {
			case "sqlite":
				st, err = OpenSQLiteObserved(filepath.Join(b.TempDir(), "bench.db"), lat.add)
			case "postgres":
				var name string
				name, pgURL = pgtest.Schema(b)
				// Its connections carry an application_name, so that the
				// sampler counts them alone on a shared server.
				u := pgtest.WithParam(pgtest.URL(b), "synchronous_commit", "on")
				st, err = OpenPostgresObserved(pgtest.WithParam(u, "application_name", storeLoadApp), name, lat.add)
			}
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			p, err := NewPool("team.yaml", TeamYAML(storeLoadFanOut), st)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			sinks := make([]Counter, storeLoadRoots)
			runAll := func(roots int) []string {
				ids := make([]string, roots)
				errs := make([]error, roots)
				var wg sync.WaitGroup
				for i := range roots {
					wg.Go(func() { ids[i], errs[i] = RunNode(ctx, p, "crew", &sinks[i]) })
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					b.Fatal(err)
				}
				return ids
			}
			del := func(ids []string) {
				for _, sid := range ids {
					if err := st.DeleteSession(ctx, sid); err != nil {
						b.Fatal(err)
					}
				}
			}
			del(runAll(1)) // warm up
			lat.reset()
			for i := range sinks {
				sinks[i].Reset()
			}
			var waits PGWaits
			var mutex float64
			cpu := CPUTime()
			b.ReportAllocs()
			for b.Loop() {
				var stop context.CancelFunc
				var sampled chan error
				if kind == "postgres" {
					var sctx context.Context
					sctx, stop = context.WithCancel(ctx)
					sampled = make(chan error, 1)
					go func() {
						w, err := SamplePostgresWaits(sctx, pgURL, storeLoadApp, 5*time.Millisecond)
						waits.Samples += w.Samples
						waits.Active += w.Active
						waits.Lock += w.Lock
						waits.LWLock += w.LWLock
						waits.Deadlocks += w.Deadlocks
						sampled <- err
					}()
				}
				m0 := mutexWaitNow()
				ids := runAll(storeLoadRoots)
				mutex += mutexWaitNow() - m0
				b.StopTimer()
				if stop != nil {
					stop()
					if err := <-sampled; err != nil {
						b.Fatal(err)
					}
				}
				del(ids)
				b.StartTimer()
			}
			reportCPU(b, CPUTime()-cpu)
			var events int
			for i := range sinks {
				events += sinks[i].N
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(lat.percentile(50).Nanoseconds()), "p50-commit-ns")
			b.ReportMetric(float64(lat.percentile(99).Nanoseconds()), "p99-commit-ns")
			b.ReportMetric(mutex*1000/float64(b.N), "mutex-wait-ms/op")
			if kind == "postgres" && waits.Active > 0 {
				b.ReportMetric(float64(waits.Active)/float64(waits.Samples), "pg-active-backends")
				b.ReportMetric(100*float64(waits.Lock)/float64(waits.Active), "pg-lock-wait-%")
				b.ReportMetric(100*float64(waits.LWLock)/float64(waits.Active), "pg-lwlock-wait-%")
				b.ReportMetric(float64(waits.Deadlocks), "pg-deadlocks")
			}
		})
	}
}
