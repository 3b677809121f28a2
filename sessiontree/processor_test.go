package sessiontree_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/sessiontree"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder collects the Changes a processor reports.
type recorder struct {
	mu sync.Mutex
	cs []sessiontree.Change
}

func (r *recorder) add(_ string, cs []sessiontree.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cs = append(r.cs, cs...)
}

func (r *recorder) all() []sessiontree.Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sessiontree.Change(nil), r.cs...)
}

// tree is what a client would know after applying every change.
type tree struct {
	created  map[string]session.Session
	sessions map[string]session.Session  // last update
	parts    map[string]sessiontree.Part // last update per part id
	msgs     map[string]sessiontree.Message
	idle     map[string]int
	errors   map[string]int
	order    []string          // part ids in first-seen order
	text     map[string]string // text accumulated from deltas, per part
}

func build(t *testing.T, cs []sessiontree.Change) *tree {
	t.Helper()
	tr := &tree{created: map[string]session.Session{}, sessions: map[string]session.Session{}, parts: map[string]sessiontree.Part{},
		msgs: map[string]sessiontree.Message{}, idle: map[string]int{}, errors: map[string]int{}, text: map[string]string{}}
	for _, c := range cs {
		switch v := c.(type) {
		case sessiontree.SessionCreated:
			if _, dup := tr.created[v.Info.ID]; dup {
				t.Errorf("session %s created twice", v.Info.ID)
			}
			tr.created[v.Info.ID] = v.Info
			tr.sessions[v.Info.ID] = v.Info
		case sessiontree.SessionUpdated:
			tr.sessions[v.Info.ID] = v.Info
		case sessiontree.MessageUpdated:
			tr.msgs[v.Info.ID] = v.Info
		case sessiontree.PartUpdated:
			if _, ok := tr.parts[v.Part.ID]; !ok {
				tr.order = append(tr.order, v.Part.ID)
				tr.text[v.Part.ID] = v.Part.Text
			}
			tr.parts[v.Part.ID] = v.Part
		case sessiontree.PartDelta:
			if _, ok := tr.parts[v.PartID]; !ok {
				t.Errorf("delta for unknown part %s", v.PartID)
			}
			tr.text[v.PartID] += v.Delta
		case sessiontree.SessionIdle:
			tr.idle[v.SessionID]++
		case sessiontree.SessionError:
			tr.errors[v.SessionID]++
		}
		if c.Session() == "" {
			t.Errorf("change %T without a session", c)
		}
	}
	return tr
}

// linkOf returns the part pointing at child.
func (tr *tree) linkOf(child string) (sessiontree.Part, int) {
	var found sessiontree.Part
	n := 0
	for _, p := range tr.parts {
		if p.Child() == child {
			found = p
			n++
		}
	}
	return found, n
}

func (tr *tree) checkNothingOpen(t *testing.T) {
	t.Helper()
	for _, p := range tr.parts {
		if p.Type == sessiontree.PartTool && (p.State.Status == sessiontree.ToolPending || p.State.Status == sessiontree.ToolRunning) {
			t.Errorf("part %s (%s %s) left %s", p.ID, p.Tool, p.CallID, p.State.Status)
		}
		if p.Type != sessiontree.PartTool && p.End.IsZero() {
			t.Errorf("%s part %s never ended", p.Type, p.ID)
		}
	}
	for _, m := range tr.msgs {
		if m.Completed.IsZero() {
			t.Errorf("message %s of %s left open", m.ID, m.SessionID)
		}
	}
}

// runPool runs a pool whose processor a projection watches, and returns
// the projection, the Changes it reported and the live stream.
func runPool(t *testing.T, m *config.Manifest, prompt string) (st *memory.Store, proj *sessiontree.Projection, rec *recorder, root string, live []event.Event) {
	t.Helper()
	st = memory.New()
	p := record.New(st, nil)
	proj = sessiontree.NewProjection(st, nil)
	rec = &recorder{}
	proj.Subscribe(rec.add)
	p.Watch(proj)
	pl, err := pool.New(m, pool.Options{Store: st, Processor: p})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	res, err := pl.RunSink(context.Background(), pool.RunRequest{Prompt: prompt}, event.SinkFunc(func(e event.Event) {
		mu.Lock()
		live = append(live, e)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	return st, proj, rec, res.SessionID, live
}

func TestPoolRunNested(t *testing.T) {
	st, p, rec, root, live := runPool(t, config.Default(), "How do agent pools work?")
	ctx := context.Background()
	tr := build(t, rec.all())

	sessions, err := session.Subtree(ctx, st, root)
	if err != nil {
		t.Fatal(err)
	}
	// orchestrator -> research -> researcher -> fact_checker, and critic
	if len(sessions) != 5 {
		t.Fatalf("%d sessions in the tree, want 5", len(sessions))
	}
	byID := map[string]session.Session{}
	for _, s := range sessions {
		byID[s.ID] = s
	}
	for _, s := range sessions[1:] {
		c, ok := tr.created[s.ID]
		if !ok {
			t.Errorf("no SessionCreated for %s (%s)", s.ID, s.AgentName)
			continue
		}
		if c.ParentID != s.ParentID || c.Depth != s.Depth || c.Depth != byID[s.ParentID].Depth+1 {
			t.Errorf("%s created with parent %s depth %d; store has %s %d", s.AgentName, c.ParentID, c.Depth, s.ParentID, s.Depth)
		}
		link, n := tr.linkOf(s.ID)
		if n != 1 {
			t.Errorf("%d parts point at %s", n, s.AgentName)
			continue
		}
		if link.SessionID != s.ParentID || link.State.Metadata["parentSessionId"] != s.ParentID {
			t.Errorf("the part pointing at %s is in %s, want %s", s.AgentName, link.SessionID, s.ParentID)
		}
		if link.State.Status != sessiontree.ToolCompleted {
			t.Errorf("the part pointing at %s is %s", s.AgentName, link.State.Status)
		}
		if tr.idle[s.ID] != 1 {
			t.Errorf("%s went idle %d times", s.AgentName, tr.idle[s.ID])
		}
		if got := tr.sessions[s.ID]; got.Status != session.StatusCompleted || got.StopReason != event.StopCompleted {
			t.Errorf("%s ends %s/%s", s.AgentName, got.Status, got.StopReason)
		}
	}
	// The task call of the orchestrator is the part that points at the team.
	team := sessions[1]
	link, _ := tr.linkOf(team.ID)
	if link.Tool != "task" || strings.HasPrefix(link.CallID, "spawn:") {
		t.Errorf("the team hangs off %s %s, want the task call", link.Tool, link.CallID)
	}
	// Team members hang off task-like parts of the team.
	for _, s := range sessions[2:] {
		if s.ParentID != team.ID {
			continue
		}
		l, _ := tr.linkOf(s.ID)
		if l.CallID != "spawn:"+s.ID || l.Tool != "task" {
			t.Errorf("member %s hangs off %s %s", s.AgentName, l.Tool, l.CallID)
		}
	}
	if tr.idle[root] != 1 || tr.sessions[root].Status != session.StatusCompleted {
		t.Errorf("root: idle %d, status %s", tr.idle[root], tr.sessions[root].Status)
	}
	tr.checkNothingOpen(t)

	// The text a client rebuilt from deltas is the final answer.
	final := ""
	for _, id := range tr.order {
		if pt := tr.parts[id]; pt.SessionID == root && pt.Type == sessiontree.PartText {
			final = tr.text[id]
			if pt.Text != final {
				t.Errorf("part %s: text %q, deltas give %q", id, pt.Text, final)
			}
		}
	}
	if !strings.Contains(final, "Here is what the research team found") {
		t.Errorf("root text = %q", final)
	}

	// Every event of the live stream is in the log of its session, in order.
	perSession := map[string][]string{}
	for _, e := range live {
		sid, inner := event.Unwrap(root, e)
		b, _ := event.Marshal(inner)
		perSession[sid] = append(perSession[sid], string(b))
	}
	for _, s := range sessions {
		recs, err := st.Events(ctx, s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(perSession[s.ID]) {
			t.Errorf("%s: %d events stored, %d live", s.AgentName, len(recs), len(perSession[s.ID]))
			continue
		}
		for i, r := range recs {
			if b, _ := event.Marshal(r.Event); string(b) != perSession[s.ID][i] {
				t.Errorf("%s event %d differs", s.AgentName, i)
			}
		}
	}

	// Duplicate guard for the life of the process: the same stream again
	// (a second consumer, a replay) creates nothing twice.
	before := len(rec.all())
	for _, e := range live {
		if _, ok := e.(event.Subagent); ok {
			continue
		}
		if s, ok := e.(event.SpawnSessionStart); ok {
			p.Apply(ctx, root, s)
		}
	}
	for _, c := range rec.all()[before:] {
		if _, ok := c.(sessiontree.SessionCreated); ok {
			t.Errorf("replayed start created %s again", c.Session())
		}
	}
	if s, ok := p.Session(team.ID); !ok || s.ParentID != root {
		t.Errorf("Session(team) = %+v, %v", s, ok)
	}
}

const mixedManifest = `
default_agent: boss
agents:
  boss:
    model:
      type: scripted
      turns:
        - tool_calls:
            - name: task
              args: {agent_or_team: helper, prompt: "do it", description: "Helper job"}
            - name: task
              args: {agent_or_team: broken, prompt: "fail please", description: "Broken job"}
            - name: task
              args: {agent_or_team: helper, prompt: "in the background", description: "Background job", async_mode: true}
        - text: "All done."
    tools: [subagent]
  helper:
    model: {type: test, custom_output_text: "helped"}
  broken:
    model:
      type: scripted
      turns:
        - text: "trying "
          error: "model exploded"
`

func TestPoolRunErrorsAndAsync(t *testing.T) {
	m, err := config.Parse("mixed.yaml", []byte(mixedManifest))
	if err != nil {
		t.Fatal(err)
	}
	st, _, rec, root, _ := runPool(t, m, "go")
	ctx := context.Background()
	tr := build(t, rec.all())
	kids, err := st.ListSessions(ctx, session.ListOptions{ParentID: root})
	if err != nil || len(kids) != 3 {
		t.Fatalf("%d children, %v", len(kids), err)
	}
	for _, k := range kids {
		link, n := tr.linkOf(k.ID)
		if n != 1 {
			t.Fatalf("%d parts point at %s", n, k.ID)
		}
		switch k.AgentName {
		case "broken":
			if link.State.Status != sessiontree.ToolError || !strings.Contains(link.State.Error, "model exploded") {
				t.Errorf("broken link: %s %q", link.State.Status, link.State.Error)
			}
			if tr.errors[k.ID] != 1 || tr.idle[k.ID] != 1 || tr.sessions[k.ID].Status != session.StatusError {
				t.Errorf("broken: %d errors, %d idle, status %s", tr.errors[k.ID], tr.idle[k.ID], tr.sessions[k.ID].Status)
			}
		case "helper":
			if link.State.Status != sessiontree.ToolCompleted {
				t.Errorf("helper link %s", link.State.Status)
			}
			if tr.sessions[k.ID].Status != session.StatusCompleted || tr.idle[k.ID] != 1 {
				t.Errorf("helper %s idle %d", tr.sessions[k.ID].Status, tr.idle[k.ID])
			}
		}
		// Each child has its prompt as a user message and the assistant
		// message answering it.
		var user, asst int
		for _, msg := range tr.msgs {
			if msg.SessionID != k.ID {
				continue
			}
			switch msg.Role {
			case sessiontree.RoleUser:
				user++
			case sessiontree.RoleAssistant:
				asst++
				if msg.ParentID == "" {
					t.Errorf("assistant message of %s answers nothing", k.AgentName)
				}
			}
		}
		if user != 1 || asst < 1 {
			t.Errorf("%s: %d user and %d assistant messages", k.AgentName, user, asst)
		}
	}
	tr.checkNothingOpen(t)
	if tr.errors[root] != 0 || tr.sessions[root].Status != session.StatusCompleted {
		t.Errorf("root: %d errors, status %s", tr.errors[root], tr.sessions[root].Status)
	}
}

// logBuffer captures warnings.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// hand feeds streams by hand as a pool does: the events of each root run
// through the run's own record.Recorder, which the projection watches.
type hand struct {
	p    *record.Processor
	proj *sessiontree.Projection
	mu   sync.Mutex
	recs map[string]*record.Recorder // by owner
}

// Apply records e, an event of the run owned by owner.
func (h *hand) Apply(ctx context.Context, owner string, e event.Event) {
	h.mu.Lock()
	r, ok := h.recs[owner]
	if !ok {
		r = h.p.Open(ctx, owner, nil)
		h.recs[owner] = r
	}
	h.mu.Unlock()
	r.Emit(e)
}

func (h *hand) Session(id string) (session.Session, bool) { return h.proj.Session(id) }

func (h *hand) Plan(ctx context.Context, sid string) ([]event.PlanEntry, bool, error) {
	return h.proj.Plan(ctx, sid)
}

func newHand(t *testing.T) (*memory.Store, *hand, *recorder, *logBuffer) {
	t.Helper()
	st := memory.New()
	if err := st.CreateSession(context.Background(), session.Session{ID: "ses_root", AgentName: "root", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	lb := &logBuffer{}
	log := slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := &hand{p: record.New(st, log), proj: sessiontree.NewProjection(st, log), recs: map[string]*record.Recorder{}}
	rec := &recorder{}
	h.proj.Subscribe(rec.add)
	h.p.Watch(h.proj)
	return st, h, rec, lb
}

func start(child, parent, call string, depth int) event.SpawnSessionStart {
	return event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: parent, ToolCallID: call, SpawnMechanism: event.MechanismTask,
		RunMode: event.RunModeSync, SourceName: "worker", SourceType: event.SourceAgent, Depth: depth, Description: "job",
		Metadata: map[string]any{"prompt": "do the job", "max_depth": 5}}
}

func wrap(path []string, parent string, depth int, e event.Event) event.Subagent {
	return event.Subagent{SourceName: "worker", SourceType: event.SourceAgent, Depth: depth, ChildSessionID: path[len(path)-1],
		ParentSessionID: parent, Path: path, Event: e}
}

func TestDuplicateStart(t *testing.T) {
	_, p, rec, lb := newHand(t)
	ctx := context.Background()
	p.Apply(ctx, "ses_root", event.RunStarted{SessionID: "ses_root", RunID: "run_1", AgentName: "root"})
	p.Apply(ctx, "ses_root", event.ToolCallStart{ToolCallID: "cal_1", ToolName: "task", Title: "task", RawInput: []byte(`{}`)})
	p.Apply(ctx, "ses_root", start("ses_c", "ses_root", "cal_1", 1))
	p.Apply(ctx, "ses_root", start("ses_c", "ses_root", "cal_1", 1))
	// A second stream (another consumer, feeding the projection by hand)
	// repeats it: still ignored.
	p.proj.Apply(ctx, "ses_other", start("ses_c", "ses_root", "cal_1", 1))
	tr := build(t, rec.all())
	if _, n := tr.linkOf("ses_c"); n != 1 {
		t.Errorf("%d parts point at the child", n)
	}
	if len(tr.created) != 2 { // ses_other (unknown root) and ses_c
		t.Errorf("created %v", tr.created)
	}
	if !strings.Contains(lb.String(), "duplicate spawn_session_start") {
		t.Errorf("no log of the duplicate: %s", lb.String())
	}
}

func TestChildWithoutStart(t *testing.T) {
	st, p, rec, lb := newHand(t)
	ctx := context.Background()
	p.Apply(ctx, "ses_root", event.RunStarted{SessionID: "ses_root", RunID: "run_1", AgentName: "root"})
	// A grandchild's event arrives first: both levels are created.
	p.Apply(ctx, "ses_root", wrap([]string{"ses_c", "ses_g"}, "ses_c", 2, event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}))
	p.Apply(ctx, "ses_root", wrap([]string{"ses_c", "ses_g"}, "ses_c", 2, event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "hi"}}))
	p.Apply(ctx, "ses_root", wrap([]string{"ses_c"}, "ses_root", 1, event.SpawnSessionEnd{ChildSessionID: "ses_g", ParentSessionID: "ses_c", SourceName: "worker", Depth: 2, StopReason: event.StopCompleted, LastAssistantMessage: "hi"}))
	p.Apply(ctx, "ses_root", event.SpawnSessionEnd{ChildSessionID: "ses_c", ParentSessionID: "ses_root", SourceName: "worker", Depth: 1, StopReason: event.StopCompleted})
	p.Apply(ctx, "ses_root", event.StreamComplete{})
	if !strings.Contains(lb.String(), "reactive fallback") {
		t.Errorf("no warning logged: %s", lb.String())
	}
	for _, c := range []struct {
		id, parent string
		depth      int
	}{{"ses_c", "ses_root", 1}, {"ses_g", "ses_c", 2}} {
		s, err := st.GetSession(ctx, c.id)
		if err != nil {
			t.Fatalf("%s not in the store: %v", c.id, err)
		}
		if s.ParentID != c.parent || s.Depth != c.depth {
			t.Errorf("%s: parent %s depth %d", c.id, s.ParentID, s.Depth)
		}
		// The processor created them: it also finalizes them in the store.
		if s.Status != session.StatusCompleted {
			t.Errorf("%s: status %s in the store", c.id, s.Status)
		}
	}
	recs, err := st.Events(ctx, "ses_g", 0)
	if err != nil || len(recs) != 2 {
		t.Errorf("grandchild log: %d, %v", len(recs), err)
	}
	tr := build(t, rec.all())
	if _, ok := tr.created["ses_g"]; !ok {
		t.Error("no SessionCreated for the grandchild")
	}
	link, n := tr.linkOf("ses_g")
	if n != 1 || link.SessionID != "ses_c" || link.State.Status != sessiontree.ToolCompleted || link.State.Output != "hi" {
		t.Errorf("grandchild link: %d %+v", n, link)
	}
	tr.checkNothingOpen(t)
}

func TestEndWithError(t *testing.T) {
	st, p, rec, _ := newHand(t)
	ctx := context.Background()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_c", ParentID: "ses_root", Depth: 1, Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	p.Apply(ctx, "ses_root", event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_1", ToolName: "task"}})
	p.Apply(ctx, "ses_root", event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: `{"x":1}`}})
	p.Apply(ctx, "ses_root", event.PartEnd{Index: 0})
	p.Apply(ctx, "ses_root", event.ToolCallStart{ToolCallID: "cal_1", ToolName: "task", Title: "task job", RawInput: []byte(`{"x":1}`)})
	p.Apply(ctx, "ses_root", start("ses_c", "ses_root", "cal_1", 1))
	// The child starts a tool that never completes, then fails.
	p.Apply(ctx, "ses_root", wrap([]string{"ses_c"}, "ses_root", 1, event.ToolCallStart{ToolCallID: "cal_2", ToolName: "slow", Title: "slow"}))
	p.Apply(ctx, "ses_root", event.SpawnSessionEnd{ChildSessionID: "ses_c", ParentSessionID: "ses_root", ToolCallID: "cal_1",
		SourceName: "worker", Depth: 1, StopReason: event.StopError, Error: "boom", Usage: &event.Usage{InputTokens: 3, OutputTokens: 4}, Cost: 0.5, DurationMS: 7})
	tr := build(t, rec.all())
	link, n := tr.linkOf("ses_c")
	if n != 1 || link.CallID != "cal_1" || link.State.Status != sessiontree.ToolError || link.State.Error != "boom" {
		t.Errorf("link: %d %+v", n, link)
	}
	if string(link.State.Input) != `{"x":1}` {
		t.Errorf("link input %s", link.State.Input)
	}
	if tr.errors["ses_c"] != 1 || tr.idle["ses_c"] != 1 {
		t.Errorf("child: %d errors %d idle", tr.errors["ses_c"], tr.idle["ses_c"])
	}
	got := tr.sessions["ses_c"]
	if got.Status != session.StatusError || got.TotalUsage.OutputTokens != 4 || got.TotalCost != 0.5 || got.DurationMS != 7 {
		t.Errorf("child record %+v", got)
	}
	// The store showed the child running (nobody finalized it): the
	// processor does.
	s, _ := st.GetSession(ctx, "ses_c")
	if s.Status != session.StatusError || s.StopReason != event.StopError || s.Metadata["error"] != "boom" {
		t.Errorf("child in the store: %+v", s)
	}
	// The child's pending tool did not stay running.
	for _, pt := range tr.parts {
		if pt.CallID == "cal_2" && pt.State.Status != sessiontree.ToolError {
			t.Errorf("child's tool part %s", pt.State.Status)
		}
	}
	// The tool call then completes in the parent.
	p.Apply(ctx, "ses_root", event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "task", ToolResult: "boom", IsError: true})
	p.Apply(ctx, "ses_root", event.StreamComplete{Message: event.Message{Role: "assistant", Content: "x", FinishReason: "stop"}})
	tr = build(t, rec.all())
	tr.checkNothingOpen(t)
	// A second end is ignored.
	n0 := len(rec.all())
	p.Apply(ctx, "ses_root", event.SpawnSessionEnd{ChildSessionID: "ses_c", ParentSessionID: "ses_root", StopReason: event.StopCompleted})
	if len(rec.all()) != n0 {
		t.Errorf("a duplicate end changed things: %v", rec.all()[n0:])
	}
}

func TestEndWithoutStart(t *testing.T) {
	_, p, rec, lb := newHand(t)
	ctx := context.Background()
	p.Apply(ctx, "ses_root", event.SpawnSessionEnd{ChildSessionID: "ses_c", ParentSessionID: "ses_root", SourceName: "w", Depth: 1, StopReason: event.StopAborted})
	p.Apply(ctx, "ses_root", event.RunError{Message: "cancelled", Code: "aborted"})
	tr := build(t, rec.all())
	if _, ok := tr.created["ses_c"]; !ok || !strings.Contains(lb.String(), "reactive fallback") {
		t.Fatal("end without start did not create the child")
	}
	if tr.sessions["ses_c"].Status != session.StatusAborted || tr.idle["ses_c"] != 1 {
		t.Errorf("child %+v", tr.sessions["ses_c"])
	}
	tr.checkNothingOpen(t)
}

func TestParentEndsOpenChildren(t *testing.T) {
	_, p, rec, _ := newHand(t)
	ctx := context.Background()
	p.Apply(ctx, "ses_root", start("ses_c", "ses_root", "", 1))
	p.Apply(ctx, "ses_root", wrap([]string{"ses_c"}, "ses_root", 1, start("ses_g", "ses_c", "", 2)))
	// The child ends, but its own child never did.
	p.Apply(ctx, "ses_root", event.SpawnSessionEnd{ChildSessionID: "ses_c", ParentSessionID: "ses_root", StopReason: event.StopCompleted})
	p.Apply(ctx, "ses_root", event.StreamComplete{})
	tr := build(t, rec.all())
	if tr.sessions["ses_g"].Status != session.StatusAborted || tr.idle["ses_g"] != 1 {
		t.Errorf("grandchild %+v idle %d", tr.sessions["ses_g"], tr.idle["ses_g"])
	}
	tr.checkNothingOpen(t)
}

func TestSubscribersGetCopies(t *testing.T) {
	p := sessiontree.NewProjection(nil, nil)
	var got [][]sessiontree.Change
	var mu sync.Mutex
	for range 2 {
		p.Subscribe(func(_ string, cs []sessiontree.Change) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, cs)
			for _, c := range cs {
				if pu, ok := c.(sessiontree.PartUpdated); ok && pu.Part.State.Metadata != nil {
					pu.Part.State.Metadata["sessionId"] = "tampered"
				}
			}
		})
	}
	cs := p.Apply(context.Background(), "ses_root", start("ses_c", "ses_root", "", 1))
	for _, c := range cs {
		if pu, ok := c.(sessiontree.PartUpdated); ok && pu.Part.Type == sessiontree.PartTool && pu.Part.Child() != "ses_c" {
			t.Errorf("a subscriber changed the returned part: %v", pu.Part.State.Metadata)
		}
	}
	unsub := p.Subscribe(func(string, []sessiontree.Change) { t.Error("unsubscribed function called") })
	unsub()
	p.Apply(context.Background(), "ses_root", event.SpawnSessionEnd{ChildSessionID: "ses_c", ParentSessionID: "ses_root", StopReason: event.StopCompleted})
	if len(got) != 4 {
		t.Errorf("%d notifications, want 4", len(got))
	}
}

func TestConcurrentStreams(t *testing.T) {
	st := memory.New()
	p := record.New(st, nil)
	p.Watch(sessiontree.NewProjection(st, nil))
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		root := "ses_r" + string(rune('a'+i))
		if err := st.CreateSession(ctx, session.Session{ID: root, Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			child := root + "_c"
			r := p.Open(ctx, root, nil)
			r.Emit(event.RunStarted{SessionID: root})
			r.Emit(start(child, root, "", 1))
			for k := range 50 {
				r.Emit(wrap([]string{child}, root, 1, event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: string(rune('a' + k%26))}}))
			}
			r.Emit(event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: root, StopReason: event.StopCompleted})
			r.Emit(event.StreamComplete{})
		})
	}
	wg.Wait()
	for i := range 8 {
		child := "ses_r" + string(rune('a'+i)) + "_c"
		recs, err := st.Events(ctx, child, 0)
		if err != nil || len(recs) != 50 {
			t.Errorf("%s: %d events, %v", child, len(recs), err)
		}
	}
}

// Part indexes come from the model stream; a hostile one must not grow
// memory without bound or crash the projection.
func TestHostilePartIndex(t *testing.T) {
	p := sessiontree.NewProjection(nil, nil)
	ctx := context.Background()
	p.Apply(ctx, "ses_r", event.RunStarted{SessionID: "ses_r", RunID: "run", AgentName: "a"})
	for _, i := range []int{-5, 1 << 30, 3} {
		p.Apply(ctx, "ses_r", event.PartStart{Index: i, Part: event.Part{PartKind: event.PartText}})
		p.Apply(ctx, "ses_r", event.PartDelta{Index: i, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "x"}})
		p.Apply(ctx, "ses_r", event.PartDelta{Index: i + 1, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "y"}})
		p.Apply(ctx, "ses_r", event.PartEnd{Index: i})
	}
}

// A child whose run ended keeps its log complete: a late event is stored
// (and changes nothing), and the child continued as a root run of its own
// (a resumed session) is stored and projected afresh.
func TestReleasedChildLateEventAndResume(t *testing.T) {
	st, p, rec, _ := newHand(t)
	ctx := context.Background()
	p.Apply(ctx, "ses_root", event.RunStarted{SessionID: "ses_root", RunID: "run_1", AgentName: "root"})
	p.Apply(ctx, "ses_root", start("ses_c", "ses_root", "cal_1", 1))
	p.Apply(ctx, "ses_root", wrap([]string{"ses_c"}, "ses_root", 1, event.RunStarted{SessionID: "ses_c", RunID: "run_2", AgentName: "worker"}))
	p.Apply(ctx, "ses_root", event.SpawnSessionEnd{ChildSessionID: "ses_c", ParentSessionID: "ses_root", StopReason: event.StopCompleted})
	p.Apply(ctx, "ses_root", event.StreamComplete{Message: event.Message{Role: "assistant", Content: "ok"}})

	before := len(rec.all())
	p.Apply(ctx, "ses_root", wrap([]string{"ses_c"}, "ses_root", 1, event.PartEnd{Index: 0}))
	if got := len(rec.all()); got != before {
		t.Errorf("a late event of an ended child changed the projection: %d new changes", got-before)
	}
	logOf := func(sid string) []event.Kind {
		recs, err := st.Events(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []event.Kind
		for _, r := range recs {
			kinds = append(kinds, r.Event.Kind())
		}
		return kinds
	}
	if got := logOf("ses_c"); len(got) != 2 || got[1] != event.KindPartEnd {
		t.Fatalf("child log after the late event: %v", got)
	}

	// The child continued as a root run.
	p.Apply(ctx, "ses_c", event.RunStarted{SessionID: "ses_c", RunID: "run_3", AgentName: "worker"})
	p.Apply(ctx, "ses_c", event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}})
	if got := logOf("ses_c"); len(got) != 4 || got[2] != event.KindRunStarted || got[3] != event.KindPartStart {
		t.Fatalf("resumed child's log: %v", got)
	}
	if len(rec.all()) == before {
		t.Error("the resumed run produced no changes")
	}
	if _, ok := p.Session("ses_c"); !ok {
		t.Error("resumed session unknown")
	}
	p.Apply(ctx, "ses_c", event.StreamComplete{Message: event.Message{Role: "assistant", Content: "again"}})
}
