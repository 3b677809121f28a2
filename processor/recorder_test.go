package processor

// Tests of the recorder (recorder.go) and of how runs are watched. They
// are internal: they look at the recorder's and the projection's state
// directly.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/agentpool/agentpool/event"
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
			lean := New(leanStore, nil).Open(ctx, lRoot, nil)
			var leanSnaps []snapshot
			play(t, leanStore.Store, o, func(e event.Event) {
				lean.Emit(e)
				if len(lean.watchers) != 0 {
					t.Fatalf("an unwatched run has %d watchers", len(lean.watchers))
				}
				leanSnaps = append(leanSnaps, takeSnapshot(t, leanStore.Store))
			})

			projStore := memory.New()
			p := New(projStore, nil)
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
			// Both runs are over: nothing of them is left open, and the
			// projection released the watched one.
			if len(lean.open) != 0 || len(watched.open) != 0 {
				t.Errorf("recorders keep %d and %d open children", len(lean.open), len(watched.open))
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

// TestRecorderFallback: what a recorder writes into the store for children
// their producer did not create, end or finalize.
func TestRecorderFallback(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	if err := st.CreateSession(ctx, session.Session{ID: lRoot, AgentName: "boss", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	r := New(st, slog.New(slog.NewTextHandler(&logs, nil))).Open(ctx, lRoot, nil)
	rec := r.Emit
	get := func(id string) session.Session {
		t.Helper()
		s, err := st.GetSession(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return s
	}
	nEvents := func(id string) int {
		t.Helper()
		evs, err := st.Events(ctx, id, 0)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return len(evs)
	}

	rec(event.RunStarted{SessionID: lRoot, RunID: "run_1", AgentName: "boss"})
	if !r.started {
		t.Fatal("the run did not start")
	}

	// A child's events without its spawn_session_start: created from the
	// wrapper, then its events are stored.
	rec(wrapChild(event.RunStarted{SessionID: lChild, RunID: "run_2", AgentName: "worker"}))
	rec(wrapChild(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "x"}}))
	c := get(lChild)
	if c.ParentID != lRoot || c.Depth != 1 || c.AgentName != "worker" || c.SourceType != event.SourceAgent ||
		c.Title != "worker (@worker subagent)" || c.Status != session.StatusRunning || c.CreatedAt.IsZero() {
		t.Errorf("child created as %+v", c)
	}
	if n := nEvents(lChild); n != 2 {
		t.Errorf("child log has %d events, want 2", n)
	}
	if !bytes.Contains([]byte(logs.String()), []byte("reactive fallback")) {
		t.Errorf("no warning: %s", logs.String())
	}

	// A grandchild's event when neither level exists: both are created,
	// the intermediate one with what is known of it.
	rec(event.Subagent{SourceName: "checker", SourceType: event.SourceAgent, Depth: 2, ChildSessionID: "ses_g2",
		ParentSessionID: "ses_c2", Path: []string{"ses_c2", "ses_g2"}, Event: event.PartEnd{Index: 0}})
	if c2 := get("ses_c2"); c2.ParentID != lRoot || c2.Depth != 1 || c2.Status != session.StatusRunning {
		t.Errorf("intermediate child created as %+v", c2)
	}
	if g2 := get("ses_g2"); g2.ParentID != "ses_c2" || g2.Depth != 2 || g2.AgentName != "checker" || g2.Title != "checker (@checker subagent)" {
		t.Errorf("grandchild created as %+v", g2)
	}
	if n := nEvents("ses_g2"); n != 1 {
		t.Errorf("grandchild log has %d events, want 1", n)
	}

	// A start for a child not in the store creates it with the start's info.
	rec(event.SpawnSessionStart{ChildSessionID: "ses_new", ParentSessionID: lRoot, SpawnMechanism: event.MechanismTask,
		RunMode: event.RunModeAsync, SourceName: "helper", SourceType: event.SourceTeamParallel, Depth: 1, Description: "Background job"})
	if n := get("ses_new"); n.ParentID != lRoot || n.Depth != 1 || n.AgentName != "helper" || n.SourceType != event.SourceTeamParallel ||
		n.Title != "Background job (@helper subagent)" || n.Status != session.StatusRunning {
		t.Errorf("started child created as %+v", n)
	}

	// An end for a child the store still shows running completes it.
	rec(event.SpawnSessionEnd{ChildSessionID: lChild, ParentSessionID: lRoot, SourceName: "worker", Depth: 1, StopReason: event.StopError,
		Error: "boom", Usage: &event.Usage{InputTokens: 3, OutputTokens: 4}, Cost: 0.5, DurationMS: 7})
	c = get(lChild)
	if c.Status != session.StatusError || c.StopReason != event.StopError || c.TotalUsage.OutputTokens != 4 || c.TotalCost != 0.5 ||
		c.DurationMS != 7 || c.Metadata["error"] != "boom" {
		t.Errorf("ended child in the store: %+v", c)
	}

	// An end for a child its producer already finalized changes nothing.
	if err := st.CreateSession(ctx, session.Session{ID: "ses_done", ParentID: lRoot, Depth: 1, AgentName: "worker", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := st.UpdateSession(ctx, "ses_done", func(s *session.Session) {
		s.Status, s.StopReason, s.TotalCost, s.DurationMS = session.StatusCompleted, event.StopCompleted, 1.5, 11
	}); err != nil {
		t.Fatal(err)
	}
	before := get("ses_done")
	rec(event.SpawnSessionEnd{ChildSessionID: "ses_done", ParentSessionID: lRoot, StopReason: event.StopError, Error: "late", Cost: 9, DurationMS: 99})
	if after := get("ses_done"); !equalRecords(after, before) || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("a finalized child changed:\n before %+v\n after  %+v", before, after)
	}
	if n := nEvents(lRoot); n != 4 { // run_started, a start, two ends
		t.Errorf("root log has %d events, want 4", n)
	}

	// An end for a child the store never had: created, then ended.
	rec(event.SpawnSessionEnd{ChildSessionID: "ses_x", ParentSessionID: lRoot, SourceName: "w", Depth: 1, StopReason: event.StopAborted})
	if x := get("ses_x"); x.ParentID != lRoot || x.Status != session.StatusAborted || x.StopReason != event.StopAborted {
		t.Errorf("ended unknown child: %+v", x)
	}

	// The root ends: the children it left open (started or created here,
	// never ended) are aborted in the store; nothing stays open.
	rec(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done"}})
	for _, id := range []string{"ses_new", "ses_c2", "ses_g2"} {
		if s := get(id); s.Status != session.StatusAborted || s.StopReason != event.StopAborted || s.Metadata["error"] != errParentEnded {
			t.Errorf("%s left open by the root: %+v", id, s)
		}
	}
	if got := get(lChild); got.Status != session.StatusError || got.Metadata["error"] != "boom" {
		t.Errorf("an ended child was changed at the root's end: %+v", got)
	}
	if len(r.open) != 0 {
		t.Errorf("after the run: %d open children", len(r.open))
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
	p := New(st, nil)
	proj := NewProjection(st, nil)
	text := func(i int, s string) []event.Event {
		return []event.Event{
			event.PartStart{Index: i, Part: event.Part{PartKind: event.PartText}},
			event.PartDelta{Index: i, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: s}},
			event.PartEnd{Index: i},
		}
	}
	recs := map[string]*Recorder{}
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
	if len(recs["ses_a"].watchers) != 0 {
		t.Fatal("ses_a is watched")
	}
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
	if got.n("ses_b") == 0 || len(recs["ses_b"].watchers) != 1 {
		t.Errorf("ses_b: %d changes, %d watchers", got.n("ses_b"), len(recs["ses_b"].watchers))
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
	if len(recs["ses_c"].watchers) != 0 {
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
	if s, _ := st.GetSession(ctx, "ses_d1"); s.Status != session.StatusRunning || len(recs["ses_d"].open) != 1 {
		t.Errorf("a child's own end ended it in the store: %s, %d open", s.Status, len(recs["ses_d"].open))
	}
	record("ses_d", event.RunError{Message: "cancelled", Code: string(event.StopAborted)})
	if s, _ := st.GetSession(ctx, "ses_d1"); s.Status != session.StatusAborted || len(recs["ses_d"].open) != 0 {
		t.Errorf("the root's end left its child %s, %d open", s.Status, len(recs["ses_d"].open))
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

// TestRecorderNoStore: without a store a recorder keeps nothing and still
// passes every event on.
func TestRecorderNoStore(t *testing.T) {
	ctx := context.Background()
	var got []event.Event
	r := New(nil, nil).Open(ctx, lRoot, event.SinkFunc(func(e event.Event) { got = append(got, e) }))
	r.Emit(event.RunStarted{SessionID: lRoot})
	r.Emit(wrapChild(event.SpawnSessionStart{ChildSessionID: lGrand, ParentSessionID: lChild}))
	r.Record(lRoot, event.Custom{EventType: "x"})
	r.Emit(event.StreamComplete{})
	if len(r.open) != 0 || len(got) != 3 {
		t.Errorf("%d open children, %d events passed on", len(r.open), len(got))
	}
}

// TestRecordKeepsStreamOrder: an event recorded without being passed on
// (Record: a session-level hook's) takes its place in the log among the
// stream's, and reaches neither the watchers nor the next sink.
func TestRecordKeepsStreamOrder(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	if err := st.CreateSession(ctx, session.Session{ID: lRoot, Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	p := New(st, nil)
	var watched []event.Event
	defer p.Watch(watcherFunc(func(_ context.Context, _ string, e event.Event) { watched = append(watched, e) }))()
	var passed []event.Event
	r := p.Open(ctx, lRoot, event.SinkFunc(func(e event.Event) { passed = append(passed, e) }))
	hookRun := event.Custom{EventType: "hook_run", Source: "command"}
	r.Record(lRoot, hookRun)
	r.Emit(event.RunStarted{SessionID: lRoot})
	r.Emit(event.StreamComplete{})
	r.Record(lRoot, hookRun)
	recs, err := st.Events(ctx, lRoot, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []event.Kind
	for _, rec := range recs {
		kinds = append(kinds, rec.Event.Kind())
	}
	want := []event.Kind{event.KindCustom, event.KindRunStarted, event.KindStreamComplete, event.KindCustom}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("log %v, want %v", kinds, want)
	}
	if len(watched) != 2 || len(passed) != 2 {
		t.Errorf("%d events watched, %d passed on, want 2 each", len(watched), len(passed))
	}
}

// TestRelayStoresNothing: events a durable engine's workers stored are
// relayed (Relay) to the watchers and the next sink in order with what the
// run records itself (Emit), and only the latter reach the store; no store
// rule runs for a relayed child's start or end.
func TestRelayStoresNothing(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	if err := st.CreateSession(ctx, session.Session{ID: lRoot, Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	p := New(st, nil)
	var watched []event.Kind
	defer p.Watch(watcherFunc(func(_ context.Context, _ string, e event.Event) { watched = append(watched, e.Kind()) }))()
	var passed []event.Kind
	r := p.Open(ctx, lRoot, event.SinkFunc(func(e event.Event) { passed = append(passed, e.Kind()) }))
	r.Relay(event.RunStarted{SessionID: lRoot})
	r.Relay(event.SpawnSessionStart{ChildSessionID: lChild, ParentSessionID: lRoot})
	r.Relay(wrapChild(event.RunStarted{SessionID: lChild}))
	r.Relay(event.SpawnSessionEnd{ChildSessionID: lChild, ParentSessionID: lRoot})
	r.Emit(event.RunError{Message: "engine gone"})
	recs, err := st.Events(ctx, lRoot, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Event.Kind() != event.KindRunError {
		t.Errorf("stored %d events, want the emitted run_error only", len(recs))
	}
	if _, err := st.GetSession(ctx, lChild); err == nil {
		t.Error("a relayed spawn_session_start created the child")
	}
	want := fmt.Sprint([]event.Kind{event.KindRunStarted, event.KindSpawnSessionStart, event.KindSubagent, event.KindSpawnSessionEnd, event.KindRunError})
	if fmt.Sprint(watched) != want || fmt.Sprint(passed) != want {
		t.Errorf("watched %v, passed %v, want %s", watched, passed, want)
	}
}

type watcherFunc func(ctx context.Context, owner string, e event.Event)

func (f watcherFunc) Observe(ctx context.Context, owner string, e event.Event) { f(ctx, owner, e) }

// Late events of a run that ended land in its own sessions' logs, not in
// another run's.
func TestLateEventsOfAnEndedRun(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	for _, id := range []string{"ses_a", "ses_b"} {
		if err := st.CreateSession(ctx, session.Session{ID: id, Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	p := New(st, nil)
	a := p.Open(ctx, "ses_a", nil)
	a.Emit(event.RunStarted{SessionID: "ses_a", RunID: "run_a"})
	a.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done"}})
	b := p.Open(ctx, "ses_b", nil)
	b.Emit(event.RunStarted{SessionID: "ses_b", RunID: "run_b"})
	a.Emit(event.PartEnd{Index: 7})
	b.Emit(event.PartEnd{Index: 8})
	logs := func(id string) []event.Event {
		recs, err := st.Events(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []event.Event
		for _, r := range recs {
			out = append(out, r.Event)
		}
		return out
	}
	la, lb := logs("ses_a"), logs("ses_b")
	if len(la) != 3 || la[2] != (event.PartEnd{Index: 7}) {
		t.Fatalf("ses_a log %v", la)
	}
	if len(lb) != 2 || lb[1] != (event.PartEnd{Index: 8}) {
		t.Fatalf("ses_b log %v", lb)
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
