package record

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// perRun is a RunWatcher that notes the runs it was asked for and the
// events each run's watcher got; its own Observe must not be called.
type perRun struct {
	mu     sync.Mutex
	asked  []string
	byRun  map[string][]event.Event
	shared int
}

func (p *perRun) Observe(context.Context, string, event.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shared++
}

func (p *perRun) WatchRun(owner string) Watcher {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, owner)
	return runOf{p: p, owner: owner}
}

type runOf struct {
	p     *perRun
	owner string
}

func (r runOf) Observe(_ context.Context, owner string, e event.Event) {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if owner != r.owner {
		panic("the watcher of run " + r.owner + " got an event of " + owner)
	}
	if r.p.byRun == nil {
		r.p.byRun = map[string][]event.Event{}
	}
	r.p.byRun[owner] = append(r.p.byRun[owner], e)
}

// A RunWatcher is asked once per run, and each run's events go to the
// watcher it returned, in the run's order.
func TestRunWatcher(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	p := New(st, nil)
	w := &perRun{}
	p.Watch(w)
	runs := map[string]*Recorder{}
	for _, id := range []string{"ses_a", "ses_b"} {
		if err := st.CreateSession(ctx, session.Session{ID: id, Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
		runs[id] = p.Open(ctx, id, nil)
	}
	for i := range 3 {
		for _, id := range []string{"ses_a", "ses_b"} {
			runs[id].Emit(event.PartEnd{Index: i})
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.asked) != 2 || w.asked[0] != "ses_a" || w.asked[1] != "ses_b" {
		t.Errorf("WatchRun asked for %v, want ses_a then ses_b", w.asked)
	}
	if w.shared != 0 {
		t.Errorf("the shared Observe got %d events", w.shared)
	}
	for _, id := range []string{"ses_a", "ses_b"} {
		got := w.byRun[id]
		if len(got) != 3 {
			t.Fatalf("%s: %d events, want 3", id, len(got))
		}
		for i, e := range got {
			if e != (event.PartEnd{Index: i}) {
				t.Errorf("%s: event %d is %v", id, i, e)
			}
		}
	}
}

// A run keeps the event logs of its sessions (session.EventLogs); when a
// session leaves the store and comes back (deleted, then made again),
// its events go to the session there now, through the store.
func TestRecorderEventLogOfASessionMadeAgain(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	mk := func() {
		t.Helper()
		if err := st.CreateSession(ctx, session.Session{ID: lRoot, Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	mk()
	r := New(st, nil).Open(ctx, lRoot, nil)
	r.Emit(event.RunStarted{SessionID: lRoot, RunID: "run_1"})
	if len(r.logs) != 1 || r.logs[0].id != lRoot {
		t.Fatalf("the run keeps the logs %v, want %s's", r.logs, lRoot)
	}
	if err := st.DeleteSession(ctx, lRoot); err != nil {
		t.Fatal(err)
	}
	mk()
	r.Emit(event.PartEnd{Index: 1})
	recs, err := st.Events(ctx, lRoot, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Event != (event.PartEnd{Index: 1}) {
		t.Fatalf("the session made again has %v, want the event emitted after", recs)
	}
	// Deleted for good: the append fails as the store's does, and the
	// run keeps no log of it.
	if err := st.DeleteSession(ctx, lRoot); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	err = r.append(st, lRoot, event.PartEnd{Index: 2})
	r.mu.Unlock()
	if !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("append to a deleted session: %v, want ErrNotFound", err)
	}
	if len(r.logs) != 0 {
		t.Errorf("the run keeps the logs %v of a deleted session", r.logs)
	}
}

// The logs a run keeps are bounded.
func TestRecorderEventLogsBounded(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := New(st, nil).Open(ctx, lRoot, nil)
	for i := range maxLogs + 3 {
		id := "ses_" + string(rune('a'+i))
		if err := st.CreateSession(ctx, session.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		err := r.append(st, id, event.PartEnd{Index: i})
		r.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(r.logs) != maxLogs || r.logs[0].id != "ses_d" {
		t.Errorf("the run keeps %d logs from %s, want %d from ses_d", len(r.logs), r.logs[0].id, maxLogs)
	}
}
