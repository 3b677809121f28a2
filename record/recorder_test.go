package record

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
		if s := get(id); s.Status != session.StatusAborted || s.StopReason != event.StopAborted || s.Metadata["error"] != session.ErrParentEnded {
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
