package sessiontree

// Tests of how runs recorded by a record.Processor are watched by a
// projection. They are internal: they look at the projection's state
// directly.

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// TestStoreWatchedOrNot plays the same streams through a recorder nobody
// watches and through one a projection watches (with a subscriber): after
// every event the two stores hold the same records and logs. The variants
// cover the spawn.Spawn path and the reactive fallbacks of older
// producers.
func TestStoreWatchedOrNot(t *testing.T) {
	variants := map[string]streamOpts{
		"spawn":                       {starts: true, spawnWrites: true, ends: true},
		"spawn/duplicates":            {starts: true, spawnWrites: true, ends: true, dups: true},
		"spawn/root-error":            {starts: true, spawnWrites: true, ends: true, rootErr: true},
		"starts-only":                 {starts: true, ends: true},
		"no-starts":                   {ends: true},
		"no-starts/no-root":           {noRoot: true, ends: true},
		"spawn/no-ends":               {starts: true, spawnWrites: true},
		"no-starts/no-ends":           {},
		"starts-only/no-ends":         {starts: true, rootErr: true},
		"no-root/spawn-writes":        {noRoot: true, starts: true, spawnWrites: true, ends: true},
		"spawn/open-grandchild":       {starts: true, spawnWrites: true, ends: true, noGrandEnd: true},
		"starts-only/open-grandchild": {starts: true, ends: true, noGrandEnd: true},
	}
	for name, o := range variants {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()

			// The stores are compared after every event, not only at the end.
			leanStore := &countingStore{Store: memory.New()}
			lean := record.New(leanStore, nil).Open(ctx, lRoot, nil)
			var leanSnaps []snapshot
			play(t, leanStore.Store, o, func(e event.Event) {
				lean.Emit(e)
				leanSnaps = append(leanSnaps, takeSnapshot(t, leanStore.Store))
			})

			projStore := memory.New()
			p := record.New(projStore, nil)
			proj := NewProjection(projStore, nil)
			var got changeLog
			defer proj.Subscribe(got.add)()
			defer p.Watch(proj)()
			watched := p.Open(ctx, lRoot, nil)
			var projSnaps []snapshot
			play(t, projStore, o, func(e event.Event) {
				watched.Emit(e)
				projSnaps = append(projSnaps, takeSnapshot(t, projStore))
			})
			if got.n(lRoot) == 0 {
				t.Fatal("the watched run reported no changes")
			}

			if len(leanSnaps) != len(projSnaps) {
				t.Fatalf("%d events unwatched, %d watched", len(leanSnaps), len(projSnaps))
			}
			for i := range leanSnaps {
				if diff := leanSnaps[i].diff(projSnaps[i]); diff != "" {
					t.Fatalf("after event %d: %s", i, diff)
				}
			}
			final := leanSnaps[len(leanSnaps)-1]
			if len(final.logs[lRoot]) == 0 || len(final.logs[lChild]) == 0 || len(final.logs[lGrand]) == 0 {
				t.Errorf("store logs: %d root, %d child, %d grandchild events", len(final.logs[lRoot]), len(final.logs[lChild]), len(final.logs[lGrand]))
			}
			if o.noGrandEnd && final.recs[lGrand].Status != session.StatusAborted {
				t.Errorf("grandchild left %s", final.recs[lGrand].Status)
			}
			// Both runs are over: no child of them is left open in the
			// store (the root's record is the pool's to end), and the
			// projection released the watched one.
			for _, snap := range []snapshot{final, projSnaps[len(projSnaps)-1]} {
				for id, rec := range snap.recs {
					if id != lRoot && rec.Status == session.StatusRunning {
						t.Errorf("%s left running", id)
					}
				}
			}
			if ns, nr := proj.held(); ns != 0 || nr != 0 {
				t.Errorf("projection keeps %d sessions, %d runs", ns, nr)
			}

			if name == "spawn" {
				// The spawn.Spawn path costs one read for the root, one per
				// start and one per end, and no write but the appends.
				events := len(final.logs[lRoot]) + len(final.logs[lChild]) + len(final.logs[lGrand])
				if leanStore.gets != 5 || leanStore.creates != 0 || leanStore.updates != 0 || leanStore.appends != events {
					t.Errorf("store calls: %d gets, %d creates, %d updates, %d appends for %d events",
						leanStore.gets, leanStore.creates, leanStore.updates, leanStore.appends, events)
				}
			}
		})
	}
}

// TestWatchedOrNot: a run is watched when a watcher was registered before
// its first event, and stays so; a projection fed by hand (Apply) projects
// a run from that event on; only the root's own end ends a run's open
// children.
func TestWatchedOrNot(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	for _, id := range []string{"ses_a", "ses_b", "ses_c", "ses_d"} {
		if err := st.CreateSession(ctx, session.Session{ID: id, AgentName: "boss", Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	p := record.New(st, nil)
	proj := NewProjection(st, nil)
	text := func(i int, s string) []event.Event {
		return []event.Event{
			event.PartStart{Index: i, Part: event.Part{PartKind: event.PartText}},
			event.PartDelta{Index: i, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: s}},
			event.PartEnd{Index: i},
		}
	}
	recs := map[string]*record.Recorder{}
	record := func(owner string, evs ...event.Event) {
		r, ok := recs[owner]
		if !ok {
			r = p.Open(ctx, owner, nil)
			recs[owner] = r
		}
		for _, e := range evs {
			r.Emit(e)
		}
	}

	// ses_a starts while nobody watches.
	record("ses_a", event.RunStarted{SessionID: "ses_a", RunID: "run_a"})
	var got changeLog
	unsubscribe := proj.Subscribe(got.add)
	unwatch := p.Watch(proj)
	// Someone watches mid-run: ses_a stays unwatched, its events are
	// stored but make no Changes.
	record("ses_a", text(0, "a")...)
	if ns, _ := proj.held(); got.n("ses_a") != 0 || ns != 0 {
		t.Errorf("unwatched run after a Watch: %d changes, %d projected sessions", got.n("ses_a"), ns)
	}
	if s, ok := proj.Session("ses_a"); !ok || s.AgentName != "boss" {
		t.Errorf("Session of an unwatched run: %+v %v", s, ok)
	}
	if evs, _ := st.Events(ctx, "ses_a", 0); len(evs) != 4 {
		t.Errorf("unwatched run stored %d events, want 4", len(evs))
	}

	// ses_b starts while watched: projected.
	record("ses_b", event.RunStarted{SessionID: "ses_b", RunID: "run_b"})
	record("ses_b", text(0, "b")...)
	if got.n("ses_b") == 0 {
		t.Errorf("ses_b: %d changes", got.n("ses_b"))
	}
	// It stays projected when the watcher and the subscriber leave.
	unwatch()
	unsubscribe()
	record("ses_b", text(1, "more")...)
	if s, ok := proj.projected("ses_b"); !ok || s.msg == nil || len(s.msg.parts) != 2 {
		t.Errorf("ses_b no longer projected after the watcher left")
	}

	// A projection fed by hand projects a run it did not watch (ses_c)
	// from that event on.
	record("ses_c", event.RunStarted{SessionID: "ses_c", RunID: "run_c"})
	if _, ok := proj.projected("ses_c"); ok {
		t.Fatal("ses_c is watched")
	}
	if cs := proj.Apply(ctx, "ses_c", event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}); len(cs) == 0 {
		t.Error("Apply on an unwatched run returned no changes")
	}
	if _, ok := proj.projected("ses_c"); !ok {
		t.Error("ses_c not projected after Apply")
	}

	// A run's open children end with the root's own stream_complete or
	// run_error, not with a child's.
	record("ses_d", event.RunStarted{SessionID: "ses_d", RunID: "run_d"},
		event.SpawnSessionStart{ChildSessionID: "ses_d1", ParentSessionID: "ses_d", SourceName: "w", SourceType: event.SourceAgent, Depth: 1})
	record("ses_d", wrapTo("ses_d", "ses_d1", event.StreamComplete{}), wrapTo("ses_d", "ses_d1", event.RunError{Message: "x"}))
	if s, _ := st.GetSession(ctx, "ses_d1"); s.Status != session.StatusRunning {
		t.Errorf("a child's own end ended it in the store: %s", s.Status)
	}
	record("ses_d", event.RunError{Message: "cancelled", Code: string(event.StopAborted)})
	if s, _ := st.GetSession(ctx, "ses_d1"); s.Status != session.StatusAborted {
		t.Errorf("the root's end left its child %s", s.Status)
	}
	record("ses_a", event.StreamComplete{Message: event.Message{Role: "assistant", Content: "a"}})
	record("ses_b", event.StreamComplete{})
	proj.Apply(ctx, "ses_c", event.StreamComplete{})
	if ns, nr := proj.held(); ns != 0 || nr != 0 {
		t.Errorf("after every run: %d sessions, %d runs", ns, nr)
	}

	// A later run of ses_a (resumed) while watched is projected.
	var again changeLog
	defer proj.Subscribe(again.add)()
	defer p.Watch(proj)()
	delete(recs, "ses_a")
	record("ses_a", text(0, "again")...)
	if again.n("ses_a") == 0 {
		t.Errorf("resumed ses_a: %d changes", again.n("ses_a"))
	}
}

// The duplicate guard keeps the last maxDone ended children, not one id
// per child for the life of the process.
func TestDuplicateGuardIsBounded(t *testing.T) {
	p := NewProjection(nil, nil)
	p.doneMu.Lock()
	defer p.doneMu.Unlock()
	for i := range maxDone + 10 {
		p.markDone(fmt.Sprintf("ses_%d", i))
	}
	p.markDone("ses_20") // already known: nothing moves
	if len(p.done) != maxDone || len(p.doneRing) != maxDone {
		t.Fatalf("guard holds %d ids (ring %d), want %d", len(p.done), len(p.doneRing), maxDone)
	}
	for _, id := range []string{"ses_0", "ses_9"} {
		if _, ok := p.done[id]; ok {
			t.Errorf("%s, among the oldest, is still guarded", id)
		}
	}
	for _, id := range []string{"ses_10", "ses_20", fmt.Sprintf("ses_%d", maxDone+9)} {
		if _, ok := p.done[id]; !ok {
			t.Errorf("%s is not guarded", id)
		}
	}
}
