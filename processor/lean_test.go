package processor

// Tests of the lean path (lean.go). They are internal: they look at the
// processor's state (lean runs, projection) directly.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

const (
	lRoot  = "ses_root"
	lChild = "ses_c"
	lGrand = "ses_g"
)

// countingStore counts the calls the processor makes to its store.
type countingStore struct {
	*memory.Store
	gets, creates, updates, appends int
}

func (c *countingStore) GetSession(ctx context.Context, id string) (session.Session, error) {
	c.gets++
	return c.Store.GetSession(ctx, id)
}

func (c *countingStore) CreateSession(ctx context.Context, s session.Session) error {
	c.creates++
	return c.Store.CreateSession(ctx, s)
}

func (c *countingStore) UpdateSession(ctx context.Context, id string, fn func(*session.Session)) error {
	c.updates++
	return c.Store.UpdateSession(ctx, id, fn)
}

func (c *countingStore) AppendEvents(ctx context.Context, id string, evs ...event.Event) error {
	c.appends++
	return c.Store.AppendEvents(ctx, id, evs...)
}

// changeLog collects what subscribers get, per owner.
type changeLog struct {
	mu sync.Mutex
	by map[string][]Change
}

func (l *changeLog) add(owner string, cs []Change) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string][]Change{}
	}
	l.by[owner] = append(l.by[owner], cs...)
}

func (l *changeLog) n(owner string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.by[owner])
}

// syncBuffer is a log destination safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// streamOpts shapes the stream play emits.
type streamOpts struct {
	noRoot      bool // the root is not in the store before the run
	starts      bool // spawn_session_start events are emitted
	spawnWrites bool // the producer writes the store as spawn.Spawn does
	ends        bool // spawn_session_end events are emitted (and, with spawnWrites, the final records written)
	dups        bool // starts and ends are emitted twice
	rootErr     bool // the root ends with run_error
	noGrandEnd  bool // the grandchild never ends (its parent does)
}

func wrapChild(e event.Event) event.Subagent {
	return event.Subagent{SourceName: "worker", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: lChild,
		ParentSessionID: lRoot, ToolCallID: "cal_1", Path: []string{lChild}, Event: e}
}

func wrapGrand(e event.Event) event.Subagent {
	return event.Subagent{SourceName: "checker", SourceType: event.SourceAgent, Depth: 2, ChildSessionID: lGrand,
		ParentSessionID: lChild, Path: []string{lChild, lGrand}, Event: e}
}

// play emits a realistic root stream (a root that calls a task tool whose
// child spawns a grandchild) to emit, writing st as the pool and spawn.Spawn
// would.
func play(t *testing.T, st session.Store, o streamOpts, emit func(event.Event)) {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if !o.noRoot {
		must(st.CreateSession(ctx, session.Session{ID: lRoot, AgentName: "boss", SourceType: event.SourceAgent, Title: "go", Status: session.StatusRunning}))
	}
	twice := func(e event.Event) {
		emit(e)
		if o.dups {
			emit(e)
		}
	}
	spawned := func(id, parent, name string, depth int) {
		if o.spawnWrites {
			must(st.CreateSession(ctx, session.Session{ID: id, ParentID: parent, Depth: depth, AgentName: name, SourceType: event.SourceAgent,
				Title: "job (@" + name + " subagent)", Status: session.StatusRunning}))
		}
	}
	finished := func(id string, cost float64) {
		if o.spawnWrites && o.ends {
			must(st.UpdateSession(ctx, id, func(s *session.Session) {
				s.Status, s.StopReason, s.TotalCost, s.DurationMS = session.StatusCompleted, event.StopCompleted, cost, 9
			}))
		}
	}
	emit(event.RunStarted{SessionID: lRoot, RunID: "run_1", AgentName: "boss"})
	emit(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_1", ToolName: "task"}})
	emit(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: `{"prompt":"do it"}`}})
	emit(event.PartEnd{Index: 0})
	emit(event.ToolCallStart{ToolCallID: "cal_1", ToolName: "task", Title: "task", RawInput: []byte(`{"prompt":"do it"}`)})
	spawned(lChild, lRoot, "worker", 1)
	if o.starts {
		twice(event.SpawnSessionStart{ChildSessionID: lChild, ParentSessionID: lRoot, ToolCallID: "cal_1", SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: "worker", SourceType: event.SourceAgent, Depth: 1, Description: "job",
			Metadata: map[string]any{"prompt": "do it"}})
	}
	emit(wrapChild(event.RunStarted{SessionID: lChild, RunID: "run_2", AgentName: "worker", ParentSessionID: lRoot}))
	emit(wrapChild(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}))
	emit(wrapChild(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "working"}}))
	emit(wrapChild(event.PartEnd{Index: 0}))
	spawned(lGrand, lChild, "checker", 2)
	if o.starts {
		twice(wrapChild(event.SpawnSessionStart{ChildSessionID: lGrand, ParentSessionID: lChild, SpawnMechanism: event.MechanismManual,
			RunMode: event.RunModeSync, SourceName: "checker", SourceType: event.SourceAgent, Depth: 2, Description: "job"}))
	}
	emit(wrapGrand(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "checked"}}))
	emit(wrapGrand(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "checked", FinishReason: "stop"}}))
	if !o.noGrandEnd {
		finished(lGrand, 0.25)
	}
	if o.ends && !o.noGrandEnd {
		twice(wrapChild(event.SpawnSessionEnd{ChildSessionID: lGrand, ParentSessionID: lChild, SourceName: "checker", SourceType: event.SourceAgent,
			Depth: 2, StopReason: event.StopCompleted, LastAssistantMessage: "checked", Cost: 0.25, DurationMS: 9}))
	}
	emit(wrapChild(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "working", FinishReason: "stop"}}))
	finished(lChild, 0.5)
	if o.ends {
		twice(event.SpawnSessionEnd{ChildSessionID: lChild, ParentSessionID: lRoot, ToolCallID: "cal_1", SourceName: "worker", SourceType: event.SourceAgent,
			Depth: 1, StopReason: event.StopCompleted, LastAssistantMessage: "working", Usage: &event.Usage{InputTokens: 5, OutputTokens: 6}, Cost: 0.5, DurationMS: 9})
	}
	emit(event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "task", ToolResult: "working"})
	emit(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}})
	emit(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "done"}})
	emit(event.PartEnd{Index: 0})
	if o.rootErr {
		emit(event.RunError{Message: "cancelled", Code: event.StopAborted})
	} else {
		emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done", FinishReason: "stop"}})
	}
}

// TestLeanStoreMatchesProjected plays the same streams through a lean run
// (no subscriber) and a projected one (a subscriber): after every event
// the two stores hold the same records and logs. The variants cover the
// spawn.Spawn path and the reactive fallbacks of older producers.
func TestLeanStoreMatchesProjected(t *testing.T) {
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
			lean := New(leanStore, nil)
			var leanSnaps []snapshot
			play(t, leanStore.Store, o, func(e event.Event) {
				lean.Record(ctx, lRoot, e)
				if len(lean.sessions) != 0 || len(lean.trees) != 0 {
					t.Fatalf("a lean run has a projection: %d sessions", len(lean.sessions))
				}
				leanSnaps = append(leanSnaps, takeSnapshot(t, leanStore.Store))
			})

			// The same through a Stream (the pool's path), which keeps the
			// run's lean state and records without the processor's lock.
			streamStore := &countingStore{Store: memory.New()}
			viaStream := New(streamStore, nil)
			stream := viaStream.Stream(lRoot)
			var streamSnaps []snapshot
			play(t, streamStore.Store, o, func(e event.Event) {
				stream.Record(ctx, e)
				streamSnaps = append(streamSnaps, takeSnapshot(t, streamStore.Store))
			})
			for i := range streamSnaps {
				if diff := streamSnaps[i].diff(leanSnaps[i]); diff != "" {
					t.Fatalf("through a Stream, after event %d: %s", i, diff)
				}
			}
			if *streamStore != (countingStore{Store: streamStore.Store, gets: leanStore.gets, creates: leanStore.creates, updates: leanStore.updates, appends: leanStore.appends}) {
				t.Errorf("store calls through a Stream %+v, through Record %+v", *streamStore, *leanStore)
			}
			if len(viaStream.lean) != 0 || stream.lean != nil {
				t.Errorf("after the run the Stream keeps its lean state (%d registered)", len(viaStream.lean))
			}

			projStore := memory.New()
			proj := New(projStore, nil)
			var got changeLog
			defer proj.Subscribe(got.add)()
			var projSnaps []snapshot
			play(t, projStore, o, func(e event.Event) {
				proj.Record(ctx, lRoot, e)
				projSnaps = append(projSnaps, takeSnapshot(t, projStore))
			})
			if got.n(lRoot) == 0 {
				t.Fatal("the projected run reported no changes")
			}

			if len(leanSnaps) != len(projSnaps) {
				t.Fatalf("%d events lean, %d projected", len(leanSnaps), len(projSnaps))
			}
			for i := range leanSnaps {
				if diff := leanSnaps[i].diff(projSnaps[i]); diff != "" {
					t.Fatalf("after event %d: %s", i, diff)
				}
			}
			final := leanSnaps[len(leanSnaps)-1]
			if len(final.logs[lRoot]) == 0 || len(final.logs[lChild]) == 0 || len(final.logs[lGrand]) == 0 {
				t.Errorf("lean store logs: %d root, %d child, %d grandchild events", len(final.logs[lRoot]), len(final.logs[lChild]), len(final.logs[lGrand]))
			}
			if o.noGrandEnd && final.recs[lGrand].Status != session.StatusAborted {
				t.Errorf("grandchild left %s", final.recs[lGrand].Status)
			}
			// Both runs are over: nothing of them is left in memory, and
			// the lean one left nothing for the duplicate guard.
			if len(lean.lean) != 0 || len(lean.sessions) != 0 || len(lean.done) != 0 {
				t.Errorf("lean processor keeps %d lean runs, %d sessions, %d done", len(lean.lean), len(lean.sessions), len(lean.done))
			}
			if len(proj.lean) != 0 || len(proj.sessions) != 0 {
				t.Errorf("projected processor keeps %d lean runs, %d sessions", len(proj.lean), len(proj.sessions))
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

// snapshot is what a store holds: per session its record (times cleared:
// they say when the records were written) and its log as wire JSON.
type snapshot struct {
	recs map[string]session.Session
	logs map[string][]string
}

func takeSnapshot(t *testing.T, st session.Store) snapshot {
	t.Helper()
	ctx := context.Background()
	all, err := st.ListSessions(ctx, session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot{recs: map[string]session.Session{}, logs: map[string][]string{}}
	for _, r := range all {
		r.CreatedAt, r.UpdatedAt = time.Time{}, time.Time{}
		s.recs[r.ID] = r
		evs, err := st.Events(ctx, r.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			b, err := event.Marshal(e.Event)
			if err != nil {
				t.Fatal(err)
			}
			s.logs[r.ID] = append(s.logs[r.ID], string(b))
		}
	}
	return s
}

// diff describes how a lean store (s) differs from a projected one.
func (s snapshot) diff(want snapshot) string {
	if len(s.recs) != len(want.recs) {
		return fmt.Sprintf("lean store has %d sessions, projected %d", len(s.recs), len(want.recs))
	}
	for id, w := range want.recs {
		if g, ok := s.recs[id]; !ok || !equalRecords(g, w) {
			return fmt.Sprintf("%s:\n lean      %+v\n projected %+v", id, g, w)
		}
		if g, w := s.logs[id], want.logs[id]; !equalStrings(g, w) {
			return fmt.Sprintf("%s: lean log\n %v\nprojected log\n %v", id, g, w)
		}
	}
	return ""
}

func equalRecords(a, b session.Session) bool { return reflect.DeepEqual(a, b) }

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLeanFallback: what a lean run writes into the store for children
// their producer did not create, end or finalize.
func TestLeanFallback(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	if err := st.CreateSession(ctx, session.Session{ID: lRoot, AgentName: "boss", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	p := New(st, slog.New(slog.NewTextHandler(&logs, nil)))
	rec := func(e event.Event) { p.Record(ctx, lRoot, e) }
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
	if len(p.lean) != 1 {
		t.Fatalf("%d lean runs, want 1", len(p.lean))
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
	// never ended) are aborted in the store; the lean state is released.
	rec(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done"}})
	for _, id := range []string{"ses_new", "ses_c2", "ses_g2"} {
		if s := get(id); s.Status != session.StatusAborted || s.StopReason != event.StopAborted || s.Metadata["error"] != errParentEnded {
			t.Errorf("%s left open by the root: %+v", id, s)
		}
	}
	if got := get(lChild); got.Status != session.StatusError || got.Metadata["error"] != "boom" {
		t.Errorf("an ended child was changed at the root's end: %+v", got)
	}
	if len(p.lean) != 0 || len(p.sessions) != 0 || len(p.done) != 0 {
		t.Errorf("after the run: %d lean runs, %d sessions, %d done", len(p.lean), len(p.sessions), len(p.done))
	}
}

// TestLeanOrProjected: a run is projected when someone subscribed before
// its first event (or it went through Apply), lean otherwise, and stays
// so; lean state lives as long as the root run.
func TestLeanOrProjected(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	for _, id := range []string{"ses_a", "ses_b", "ses_c", "ses_d"} {
		if err := st.CreateSession(ctx, session.Session{ID: id, AgentName: "boss", Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	p := New(st, nil)
	text := func(i int, s string) []event.Event {
		return []event.Event{
			event.PartStart{Index: i, Part: event.Part{PartKind: event.PartText}},
			event.PartDelta{Index: i, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: s}},
			event.PartEnd{Index: i},
		}
	}
	record := func(owner string, evs ...event.Event) {
		for _, e := range evs {
			p.Record(ctx, owner, e)
		}
	}

	// ses_a starts with no subscriber: lean.
	record("ses_a", event.RunStarted{SessionID: "ses_a", RunID: "run_a"})
	if _, ok := p.lean["ses_a"]; !ok || len(p.lean) != 1 {
		t.Fatalf("ses_a is not lean: %d lean runs", len(p.lean))
	}
	var got changeLog
	unsubscribe := p.Subscribe(got.add)
	// Someone subscribes mid-run: ses_a stays lean, its events are stored
	// but make no Changes.
	record("ses_a", text(0, "a")...)
	if got.n("ses_a") != 0 || len(p.sessions) != 0 {
		t.Errorf("lean run after a subscription: %d changes, %d projected sessions", got.n("ses_a"), len(p.sessions))
	}
	if s, ok := p.Session("ses_a"); !ok || s.AgentName != "boss" {
		t.Errorf("Session of a lean run: %+v %v", s, ok)
	}
	if evs, _ := st.Events(ctx, "ses_a", 0); len(evs) != 4 {
		t.Errorf("lean run stored %d events, want 4", len(evs))
	}

	// ses_b starts while someone subscribes: projected.
	record("ses_b", event.RunStarted{SessionID: "ses_b", RunID: "run_b"})
	record("ses_b", text(0, "b")...)
	if got.n("ses_b") == 0 || len(p.lean) != 1 {
		t.Errorf("ses_b: %d changes, %d lean runs", got.n("ses_b"), len(p.lean))
	}
	// It stays projected when the subscriber leaves.
	unsubscribe()
	record("ses_b", text(1, "more")...)
	if s, ok := p.sessions["ses_b"]; !ok || s.msg == nil || len(s.msg.parts) != 2 {
		t.Errorf("ses_b no longer projected after the subscriber left")
	}
	if _, lean := p.lean["ses_b"]; lean {
		t.Error("ses_b turned lean")
	}

	// Apply always projects: a lean run (ses_c) that gets an Apply is
	// projected from then on.
	record("ses_c", event.RunStarted{SessionID: "ses_c", RunID: "run_c"})
	if _, ok := p.lean["ses_c"]; !ok {
		t.Fatal("ses_c is not lean")
	}
	if cs := p.Apply(ctx, "ses_c", event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}); len(cs) == 0 {
		t.Error("Apply on a lean run returned no changes")
	}
	if _, lean := p.lean["ses_c"]; lean {
		t.Error("ses_c still lean after Apply")
	}
	if _, ok := p.sessions["ses_c"]; !ok {
		t.Error("ses_c not projected after Apply")
	}

	// Lean state is released when the root run ends: stream_complete or
	// run_error of the root itself, not of a child.
	record("ses_d", event.RunStarted{SessionID: "ses_d", RunID: "run_d"})
	record("ses_d", wrapTo("ses_d", "ses_d1", event.StreamComplete{}), wrapTo("ses_d", "ses_d1", event.RunError{Message: "x"}))
	if len(p.lean) != 2 {
		t.Errorf("%d lean runs after a child's end, want 2 (ses_a, ses_d)", len(p.lean))
	}
	record("ses_a", event.StreamComplete{Message: event.Message{Role: "assistant", Content: "a"}})
	record("ses_d", event.RunError{Message: "cancelled", Code: event.StopAborted})
	if len(p.lean) != 0 {
		t.Errorf("%d lean runs after their roots ended", len(p.lean))
	}
	if len(p.free) == 0 || len(p.free) > maxFreeLean {
		t.Errorf("%d released lean runs kept for reuse", len(p.free))
	}
	for _, r := range p.free {
		if len(r.open) != 0 {
			t.Errorf("a released lean run keeps %d children", len(r.open))
		}
	}
	record("ses_b", event.StreamComplete{})
	p.Apply(ctx, "ses_c", event.StreamComplete{})
	if len(p.sessions) != 0 || len(p.trees) != 0 {
		t.Errorf("after every run: %d sessions, %d trees", len(p.sessions), len(p.trees))
	}

	// A later run of ses_a (resumed) with a subscriber is projected.
	var again changeLog
	defer p.Subscribe(again.add)()
	record("ses_a", text(0, "again")...)
	if again.n("ses_a") == 0 || len(p.lean) != 0 {
		t.Errorf("resumed ses_a: %d changes, %d lean runs", again.n("ses_a"), len(p.lean))
	}
}

func wrapTo(parent, child string, e event.Event) event.Subagent {
	return event.Subagent{SourceName: "w", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: child, ParentSessionID: parent,
		Path: []string{child}, Event: e}
}

// TestLeanNoStore: without a store a lean run keeps only its lean state,
// released at its end.
func TestLeanNoStore(t *testing.T) {
	p := New(nil, nil)
	ctx := context.Background()
	p.Record(ctx, lRoot, event.RunStarted{SessionID: lRoot})
	p.Record(ctx, lRoot, wrapChild(event.PartEnd{}))
	if len(p.lean) != 1 || len(p.sessions) != 0 {
		t.Errorf("%d lean runs, %d sessions", len(p.lean), len(p.sessions))
	}
	p.Record(ctx, lRoot, event.StreamComplete{})
	if len(p.lean) != 0 {
		t.Errorf("%d lean runs after the end", len(p.lean))
	}
}

// A Stream whose run ended does not touch the lean state it kept, even
// when another run's Stream reuses it: a late event goes through Record's
// path and lands in its own session's log.
func TestStreamAfterItsRunEnded(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	for _, id := range []string{"ses_a", "ses_b"} {
		if err := st.CreateSession(ctx, session.Session{ID: id, Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	p := New(st, nil)
	a := p.Stream("ses_a")
	a.Record(ctx, event.RunStarted{SessionID: "ses_a", RunID: "run_a"})
	kept := a.lean
	if kept == nil {
		t.Fatal("the Stream did not keep its lean run")
	}
	a.Record(ctx, event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done"}})
	if a.lean != nil || len(p.lean) != 0 {
		t.Fatalf("after the end: stream keeps %v, %d lean runs registered", a.lean, len(p.lean))
	}

	b := p.Stream("ses_b")
	b.Record(ctx, event.RunStarted{SessionID: "ses_b", RunID: "run_b"})
	if b.lean != kept {
		// The free list is last in, first out: the state a run released
		// is the next run's. Without that reuse this test checks nothing.
		t.Fatal("the released lean run was not reused by the next run")
	}
	// A late event of run a: not recorded into b's state.
	a.Record(ctx, event.PartEnd{Index: 7})
	b.Record(ctx, event.PartEnd{Index: 8})
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
	if b.lean == nil || b.lean == a.lean {
		t.Fatalf("streams share lean state: a %p, b %p", a.lean, b.lean)
	}
	b.Record(ctx, event.StreamComplete{Message: event.Message{Role: "assistant"}})
	a.Record(ctx, event.StreamComplete{Message: event.Message{Role: "assistant"}})
	if len(p.lean) != 0 {
		t.Fatalf("%d lean runs left", len(p.lean))
	}
}

// The duplicate guard keeps the last maxDone ended children, not one id
// per child for the life of the process.
func TestDuplicateGuardIsBounded(t *testing.T) {
	p := New(nil, nil)
	p.mu.Lock()
	defer p.mu.Unlock()
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
