package agui

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// listCounter is a store that counts what ListSessions reads: the calls
// without a thread filter and the sessions it returns.
type listCounter struct {
	session.Store
	mu       sync.Mutex
	read     int // sessions returned
	unfilter int // calls without ListOptions.Thread
}

func (c *listCounter) ListSessions(ctx context.Context, opts session.ListOptions) ([]session.Session, error) {
	out, err := c.Store.ListSessions(ctx, opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.read += len(out)
	if opts.Thread == "" {
		c.unfilter++
	}
	return out, err
}

func (c *listCounter) take() (read, unfiltered int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	read, unfiltered = c.read, c.unfilter
	c.read, c.unfilter = 0, 0
	return read, unfiltered
}

// TestAGUIThreadGrowth (issue 31): with more threads stored than the
// server keeps in memory, every AG-UI run took 100 times longer, also
// after a restart: each run on a thread the table did not hold read every
// stored root session. Now a run finds its thread through the store's
// index: it reads at most the one session of its thread, never a list of
// all of them, on a new thread, on a stored one the server has not seen
// (after a restart) and on one it forgot; the table in memory stays within
// MaxThreads. (The index itself: TestAGUIThreadGrowth*Plan and
// TestAGUIThreadGrowthMemoryIndex in the stores' packages; the time per
// run: BenchmarkAGUIRunThreads.)
func TestAGUIThreadGrowth(t *testing.T) {
	servertest.NoLeaks(t)
	const maxThreads, stored = 4, 60
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "threads.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	seedThreads(t, st, stored)
	p := servertest.PoolWith(t, answerYAML, pool.Options{Store: st})
	seeded := func(thread string) string {
		t.Helper()
		found, err := st.ListSessions(context.Background(), session.ListOptions{Thread: thread})
		if err != nil || len(found) != 1 {
			t.Fatalf("stored thread %s: %v %v", thread, found, err)
		}
		return found[0].ID
	}

	for restart := range 2 {
		s, ts := newServer(t, p, Options{MaxThreads: maxThreads})
		counter := &listCounter{Store: st}
		s.threads.store = counter
		check := func(thread, wantSession string) {
			t.Helper()
			evs := runOK(t, ts.URL+"/", runBody(thread, "hi"))
			read, unfiltered := counter.take()
			if unfiltered > 0 || read > 1 {
				t.Errorf("server %d, run on %s: read %d sessions, %d lists of every session; want at most its own, none",
					restart, thread, read, unfiltered)
			}
			if wantSession != "" && rootOf(t, st, thread).ID != wantSession {
				t.Errorf("server %d, run on %s: session %s, want the stored %s", restart, thread, rootOf(t, st, thread).ID, wantSession)
			}
			if evs[len(evs)-1]["type"] != "RUN_FINISHED" {
				t.Errorf("server %d, run on %s ended with %v", restart, thread, evs[len(evs)-1])
			}
		}
		old := fmt.Sprint("old-", 7+restart)
		check(old, seeded(old)) // stored, never seen by this server
		for i := range 2 * maxThreads {
			check(fmt.Sprintf("new-%d-%d", restart, i), "")
		}
		check(old, seeded(old)) // forgotten by the table since
		if n := s.threads.size(); n > maxThreads {
			t.Errorf("server %d: %d threads in memory, want at most %d", restart, n, maxThreads)
		}
	}
}
