package sessiontree

// Helpers of the internal tests: stores that count their calls, a stream
// player, snapshots of a store.

import (
	"context"
	"fmt"
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

// countingStore counts the calls made to its store.
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

// EventLog hands the embedded store's logs counted too: the recorder
// appends through them (session.EventLogs).
func (c *countingStore) EventLog(ctx context.Context, id string) (session.EventLog, error) {
	l, err := c.Store.EventLog(ctx, id)
	if err != nil {
		return nil, err
	}
	return countingLog{c: c, log: l}, nil
}

type countingLog struct {
	c   *countingStore
	log session.EventLog
}

func (l countingLog) AppendEvents(evs ...event.Event) error {
	l.c.appends++
	return l.log.AppendEvents(evs...)
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
		emit(event.RunError{Message: "cancelled", Code: string(event.StopAborted)})
	} else {
		emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done", FinishReason: "stop"}})
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

// diff describes how a store (s) differs from another (want).
func (s snapshot) diff(want snapshot) string {
	if len(s.recs) != len(want.recs) {
		return fmt.Sprintf("store has %d sessions, want %d", len(s.recs), len(want.recs))
	}
	for id, w := range want.recs {
		if g, ok := s.recs[id]; !ok || !equalRecords(g, w) {
			return fmt.Sprintf("%s:\n got  %+v\n want %+v", id, g, w)
		}
		if g, w := s.logs[id], want.logs[id]; !equalStrings(g, w) {
			return fmt.Sprintf("%s: log\n %v\nwant\n %v", id, g, w)
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

func wrapTo(parent, child string, e event.Event) event.Subagent {
	return event.Subagent{SourceName: "w", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: child, ParentSessionID: parent,
		Path: []string{child}, Event: e}
}

// held counts what p holds of runs in progress: their sessions (in the
// index) and the runs themselves.
func (p *Projection) held() (sessions, runs int) {
	p.index.Range(func(any, any) bool { sessions++; return true })
	p.roots.Range(func(any, any) bool { runs++; return true })
	return sessions, runs
}

// projected returns the live projection of session id, if any.
func (p *Projection) projected(id string) (*sess, bool) {
	var got *sess
	ok := p.live(id, func(s *sess) { got = s })
	return got, ok
}
