package spawn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/team"
	"github.com/agentpool/agentpool/tool"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const chainYAML = `
default_agent: a
agents:
  a:
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: b, prompt: go b}}]}, a done]}
    tools: [subagent]
  b:
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: c, prompt: go c}}]}, b done]}
    tools: [subagent]
  c:
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: d, prompt: go d}}]}, c done]}
    tools: [subagent]
  d:
    model: {type: test, custom_output_text: d done}
limits: {max_depth: 2}
`

// A spawn beyond max_depth fails before the child exists: no start, no
// end, no stored session, and the model sees an error result.
func TestDepthLimit(t *testing.T) {
	p := mustPool(t, chainYAML, pool.Options{})
	res, evs := runPool(t, context.Background(), p, "a", "go")
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "a done" {
		t.Fatalf("root result = %+v", res.Result)
	}
	for _, s := range starts(res.SessionID, evs) {
		if s.SourceName == "d" {
			t.Fatalf("start emitted for d beyond max_depth: %+v", s)
		}
	}
	if got := len(starts(res.SessionID, evs)); got != 2 {
		t.Fatalf("%d starts, want 2 (b, c)", got)
	}
	if n := len(sessionsNamed(t, p.Store(), "d")); n != 0 {
		t.Fatalf("%d stored sessions of d, want 0", n)
	}
	cs := sessionsNamed(t, p.Store(), "c")
	if len(cs) != 1 || cs[0].Depth != 2 {
		t.Fatalf("sessions of c = %+v", cs)
	}
	var failed *event.ToolCallComplete
	for _, c := range toolCompletes(res.SessionID, evs, "task") {
		if strings.Contains(string(c.ToolInput), `"d"`) {
			failed = &c
		}
	}
	if failed == nil || !failed.IsError || !contains(failed.ToolResult, "depth limit", "max_depth 2") {
		t.Fatalf("task d result = %+v", failed)
	}
	// The model of c saw the error result in its next request.
	msgs, err := p.Store().Messages(context.Background(), cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	saw := false
	for _, m := range msgs {
		for _, part := range m.Parts {
			if part.Kind == model.PartToolResult && part.IsError && strings.Contains(part.Text, "depth limit") {
				saw = true
			}
		}
	}
	if !saw {
		t.Fatalf("c's conversation has no error tool result: %+v", msgs)
	}
	if e := endOf(t, res.SessionID, evs, "c"); e.StopReason != event.StopCompleted || e.LastAssistantMessage != "c done" {
		t.Fatalf("end of c = %+v", e)
	}
}

// The Go API refuses a spawn beyond max_depth and emits nothing.
func TestDepthLimitManual(t *testing.T) {
	h := newHarness(t, spawn.Limits{MaxDepth: 3})
	leaf := h.agent("leaf", textModel("hi"))
	ctx := context.Background()
	sess := session.Session{ID: id.Descending(id.Session), Depth: 3, AgentName: "deep", SourceType: event.SourceAgent, CreatedAt: time.Now()}
	if err := h.store.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	sink, events := eventtest.Collect()
	inv := mustRoot(t)(h.rt.NewRoot(sess, id.Ascending(id.Run), "", nil, sink))
	_, err := spawn.Spawn(ctx, inv, spawn.Request{Node: leaf, Prompt: "x"})
	h.rt.Release(inv)
	if !errors.Is(err, spawn.ErrDepthLimit) {
		t.Fatalf("Spawn error = %v, want ErrDepthLimit", err)
	}
	if evs := events(); len(evs) != 0 {
		t.Fatalf("events emitted for a refused spawn: %v", evs)
	}
	all, _ := h.store.ListSessions(ctx, session.ListOptions{})
	if len(all) != 1 {
		t.Fatalf("%d sessions stored, want only the root", len(all))
	}
	if _, err := spawn.Spawn(ctx, inv, spawn.Request{}); !errors.Is(err, spawn.ErrUnknownNode) {
		t.Fatalf("Spawn without node: %v", err)
	}
}

// A child whose model fails ends with stop_reason error; the parent sees an
// error result and carries on to its final answer.
func TestChildModelError(t *testing.T) {
	p := mustPool(t, `
agents:
  a:
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: bad, prompt: try}}]}, parent carried on]}
    tools: [subagent]
  bad:
    model: {type: scripted, turns: [{text: partial answer, error: upstream exploded}]}
`, pool.Options{})
	res, evs := runPool(t, context.Background(), p, "a", "go")
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "parent carried on" {
		t.Fatalf("root result = %+v", res.Result)
	}
	e := endOf(t, res.SessionID, evs, "bad")
	if e.StopReason != event.StopError || !strings.Contains(e.Error, "upstream exploded") {
		t.Fatalf("end of bad = %+v", e)
	}
	tc := toolCompletes(res.SessionID, evs, "task")
	if len(tc) != 1 || !tc[0].IsError || !contains(tc[0].ToolResult, "upstream exploded", e.ChildSessionID) {
		t.Fatalf("task result = %+v", tc)
	}
	st, err := p.Store().GetSession(context.Background(), e.ChildSessionID)
	if err != nil || st.Status != session.StatusError || st.StopReason != event.StopError {
		t.Fatalf("stored child = %+v, %v", st, err)
	}
	// The child's run_error is its last event, before its end.
	var last event.Event
	for _, pe := range unwrapAll(res.SessionID, evs) {
		if pe.session == e.ChildSessionID {
			last = pe.ev
		}
	}
	if re, ok := last.(event.RunError); !ok || !strings.Contains(re.Message, "upstream exploded") {
		t.Fatalf("last event of the child = %#v", last)
	}
}

// panicNode panics in the middle of its run.
type panicNode struct{}

func (panicNode) Name() string                 { return "boom" }
func (panicNode) Description() string          { return "panics" }
func (panicNode) SourceType() event.SourceType { return event.SourceAgent }
func (panicNode) ModelID() string              { return "" }
func (panicNode) Run(_ context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: "boom", ParentSessionID: inv.Session.ParentID})
	panic("node exploded")
}

// A panicking node ends its child session with stop_reason error; a
// panicking tool becomes an error result that the model sees.
func TestPanics(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	h.add(panicNode{})
	explode := tool.New("explode", "panics", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		panic("tool exploded")
	})
	var sawToolError atomic.Bool
	h.agent("toolpanic", newFnModel(func(_ context.Context, turn int, req *model.Request) reply {
		if turn == 0 {
			return reply{calls: []call{{name: "explode"}}}
		}
		if r := toolResults(req.Messages); len(r) == 1 && r[0].IsError && strings.Contains(r[0].Text, "tool exploded") {
			sawToolError.Store(true)
		}
		return reply{text: "survived the tool"}
	}), explode)
	h.agent("root", newFnModel(func(_ context.Context, turn int, _ *model.Request) reply {
		switch turn {
		case 0:
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "boom", "prompt": "x"}}}}
		case 1:
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "toolpanic", "prompt": "y"}}}}
		}
		return reply{text: "after panics"}
	}))
	out := h.run(context.Background(), "root", "go")
	if out.res.StopReason != event.StopCompleted || out.res.Output != "after panics" {
		t.Fatalf("root result = %+v", out.res)
	}
	e := endOf(t, out.root, out.evs, "boom")
	if e.StopReason != event.StopError || !strings.Contains(e.Error, "node exploded") {
		t.Fatalf("end of the panicking node = %+v", e)
	}
	if st, _ := h.store.GetSession(context.Background(), e.ChildSessionID); st.Status != session.StatusError {
		t.Fatalf("stored status of the panicking node = %s", st.Status)
	}
	if h.rt.Running(e.ChildSessionID) {
		t.Fatal("panicked child still registered")
	}
	te := endOf(t, out.root, out.evs, "toolpanic")
	if te.StopReason != event.StopCompleted || te.LastAssistantMessage != "survived the tool" || !sawToolError.Load() {
		t.Fatalf("tool panic: end = %+v, model saw the error: %v", te, sawToolError.Load())
	}
}

func decode(t *testing.T, s string) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return m
}

// An async child returns {task_id, session_id} at once; task_status and
// task_output report it; its result reaches the parent's next request.
func TestAsync(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	gate := make(chan struct{})
	h.agent("bg", newFnModel(func(ctx context.Context, _ int, _ *model.Request) reply {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return reply{text: "BG RESULT"}
	}))
	var (
		mu     sync.Mutex
		taskID string
		seen   = map[int][]model.Part{}
	)
	parent := newFnModel(func(_ context.Context, turn int, req *model.Request) reply {
		mu.Lock()
		defer mu.Unlock()
		seen[turn] = toolResults(req.Messages)
		switch turn {
		case 0:
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "bg", "prompt": "work", "description": "background work", "async_mode": true}}}}
		case 1:
			var r map[string]string
			_ = json.Unmarshal([]byte(seen[1][0].Text), &r)
			taskID = r["task_id"]
			return reply{calls: []call{{name: "task_status", args: map[string]any{"task_id": taskID}}, {name: "task_output", args: map[string]any{"task_id": taskID}}}}
		case 2:
			close(gate)
			return reply{text: "waiting for the background task"}
		case 3:
			return reply{calls: []call{{name: "task_status", args: map[string]any{"task_id": taskID}}, {name: "task_output", args: map[string]any{"task_id": taskID}}}}
		}
		return reply{text: "all done"}
	})
	h.agent("parent", parent)
	out := h.run(context.Background(), "parent", "go")
	if out.res.StopReason != event.StopCompleted || out.res.Output != "all done" {
		t.Fatalf("root result = %+v", out.res)
	}
	ss := starts(out.root, out.evs)
	if len(ss) != 1 || ss[0].RunMode != event.RunModeAsync || ss[0].TaskID == "" || ss[0].SpawnMechanism != event.MechanismTask {
		t.Fatalf("starts = %+v", ss)
	}
	first := decode(t, seen[1][0].Text)
	if first["task_id"] != ss[0].TaskID || first["session_id"] != ss[0].ChildSessionID || seen[1][0].IsError {
		t.Fatalf("async task result = %+v, start %+v", first, ss[0])
	}
	if st := decode(t, seen[2][0].Text); st["status"] != spawn.TaskRunning {
		t.Fatalf("task_status while running = %v", st)
	}
	if o := decode(t, seen[2][1].Text); o["status"] != spawn.TaskRunning {
		t.Fatalf("task_output while running = %v", o)
	}
	if st := decode(t, seen[4][0].Text); st["status"] != string(event.StopCompleted) {
		t.Fatalf("task_status after the end = %v", st)
	}
	if o := decode(t, seen[4][1].Text); o["status"] != string(event.StopCompleted) || o["output"] != "BG RESULT" {
		t.Fatalf("task_output after the end = %v", o)
	}
	// The request after "waiting" carries the injected result.
	reqs := parent.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d parent requests, want 5", len(reqs))
	}
	msgs := reqs[3].Messages
	lastMsg := msgs[len(msgs)-1]
	if !lastMsg.Synthetic || lastMsg.Role != model.RoleUser || !contains(lastMsg.Text(), "BG RESULT", ss[0].TaskID, ss[0].ChildSessionID) {
		t.Fatalf("request 4 does not end with the injected result: %+v", lastMsg)
	}
	for _, r := range reqs[:3] {
		for _, m := range r.Messages {
			if strings.Contains(m.Text(), "BG RESULT") {
				t.Fatal("result delivered before the child ended")
			}
		}
	}
	// Stored conversation too.
	stored, _ := h.store.Messages(context.Background(), out.root)
	found := false
	for _, m := range stored {
		if m.Synthetic && strings.Contains(m.Text(), "BG RESULT") {
			found = true
		}
	}
	if !found {
		t.Fatal("injected result not stored in the parent's conversation")
	}
	// The task table went with the run (TestTaskTableScopedToRun,
	// TestTaskTableReleasedWithRun): task_status above read it.
}

// An async result that arrives while the parent runs other tools is seen
// in the next request, and costs no extra model turn.
func TestAsyncNoSpuriousTurn(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	gate := make(chan struct{})
	h.agent("bg", newFnModel(func(ctx context.Context, _ int, _ *model.Request) reply {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return reply{text: "BG RESULT"}
	}))
	waitBG := tool.New("wait_bg", "lets the background task end and waits for it", func(ctx context.Context, _ tool.Call, _ struct{}) (tool.Result, error) {
		close(gate)
		spawn.InvocationFrom(ctx).AwaitAsync(ctx) // the result is in the inbox now
		return tool.Result{Content: "idle"}, nil
	})
	parent := newFnModel(func(_ context.Context, turn int, _ *model.Request) reply {
		switch turn {
		case 0:
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "bg", "prompt": "work", "async_mode": true}}}}
		case 1:
			return reply{calls: []call{{name: "wait_bg"}}}
		}
		return reply{text: "final"}
	})
	h.agent("parent", parent, waitBG)
	out := h.run(context.Background(), "parent", "go")
	if out.res.Output != "final" {
		t.Fatalf("result = %+v", out.res)
	}
	reqs := parent.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	msgs := reqs[2].Messages
	if m := msgs[len(msgs)-1]; !m.Synthetic || !strings.Contains(m.Text(), "BG RESULT") {
		t.Fatalf("third request does not carry the result: %+v", m)
	}
}

const teamYAML = `
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: panel, prompt: review this}}]
        - tool_calls: [{name: task, args: {agent_or_team: chain, prompt: start}}]
        - lead done
    tools: [subagent]
  x: {model: {type: test, custom_output_text: x out}}
  y: {model: {type: test, custom_output_text: y out}}
teams:
  panel: {mode: parallel, members: [x, y], shared_prompt: Be brief.}
  chain: {mode: sequential, members: [x, y]}
`

// Team members' sessions are children of the team's session.
func TestTeamMembersParent(t *testing.T) {
	p := mustPool(t, teamYAML, pool.Options{})
	res, evs := runPool(t, context.Background(), p, "lead", "go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("root result = %+v", res.Result)
	}
	ctx := context.Background()
	all, _ := p.Store().ListSessions(ctx, session.ListOptions{})
	if len(all) != 7 {
		t.Fatalf("%d sessions, want 7", len(all))
	}
	byID := map[string]session.Session{}
	for _, s := range all {
		byID[s.ID] = s
	}
	for _, s := range all {
		switch s.AgentName {
		case "panel", "chain":
			if s.ParentID != res.SessionID || s.Depth != 1 {
				t.Errorf("team %s: parent %s depth %d", s.AgentName, s.ParentID, s.Depth)
			}
		case "x", "y":
			parent := byID[s.ParentID]
			if (parent.AgentName != "panel" && parent.AgentName != "chain") || s.Depth != 2 {
				t.Errorf("member %s: parent %+v depth %d", s.AgentName, parent, s.Depth)
			}
			if s.Status != session.StatusCompleted {
				t.Errorf("member %s: status %s", s.AgentName, s.Status)
			}
		}
	}
	kids := map[string]int{}
	for _, s := range all {
		kids[byID[s.ParentID].AgentName]++
	}
	if kids["panel"] != 2 || kids["chain"] != 2 {
		t.Fatalf("children per team: %v", kids)
	}
	for _, s := range starts(res.SessionID, evs) {
		if s.SourceName == "x" || s.SourceName == "y" {
			if s.SpawnMechanism != event.MechanismSpawn || byID[s.ParentSessionID].Depth != 1 {
				t.Errorf("member start = %+v", s)
			}
			// The sequential chain hands x's output to y.
			if byID[s.ParentSessionID].AgentName == "chain" && s.SourceName == "y" && s.Metadata["prompt"] != "x out" {
				t.Errorf("chain y prompt = %v", s.Metadata["prompt"])
			}
			if byID[s.ParentSessionID].AgentName == "panel" && s.Metadata["prompt"] != "Be brief.\n\nreview this" {
				t.Errorf("panel prompt = %q", s.Metadata["prompt"])
			}
		}
	}
}

// countNode counts how many of its sessions run at once; the first that
// runs as the second at once closes both.
type countNode struct {
	name     string
	cur, max *atomic.Int64
	ran      *atomic.Int64
	both     *twoAtOnce
}

// twoAtOnce is closed once two countNodes ran at once.
type twoAtOnce struct {
	once sync.Once
	ch   chan struct{}
}

func (c countNode) Name() string                 { return c.name }
func (c countNode) Description() string          { return "counts" }
func (c countNode) SourceType() event.SourceType { return event.SourceAgent }
func (c countNode) ModelID() string              { return "" }
func (c countNode) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: c.name, ParentSessionID: inv.Session.ParentID})
	n := c.cur.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			break
		}
	}
	if n >= 2 {
		c.both.once.Do(func() { close(c.both.ch) })
	}
	// Hold the slot until two ran at once, so that a limit that lets more
	// through is seen. The timer bounds only a limit that lets fewer
	// through (the test then fails on the count, not by hanging).
	select {
	case <-c.both.ch:
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
	}
	c.cur.Add(-1)
	c.ran.Add(1)
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "counted", FinishReason: "stop"}})
	return spawn.Result{Output: "counted", StopReason: event.StopCompleted}
}

// With max_children 2, a parallel team of 10 runs all members, never more
// than 2 at once: further spawns wait instead of failing.
func TestMaxChildren(t *testing.T) {
	h := newHarness(t, spawn.Limits{MaxChildren: 2})
	var cur, maxRun, ran atomic.Int64
	both := &twoAtOnce{ch: make(chan struct{})}
	var members []string
	for i := range 10 {
		name := fmt.Sprintf("m%d", i)
		h.add(countNode{name: name, cur: &cur, max: &maxRun, ran: &ran, both: both})
		members = append(members, name)
	}
	tm, err := team.New(team.Config{Name: "ten", Mode: team.Parallel, Members: members})
	if err != nil {
		t.Fatal(err)
	}
	h.add(tm)
	out := h.run(context.Background(), "ten", "count")
	if out.res.StopReason != event.StopCompleted {
		t.Fatalf("team result = %+v", out.res)
	}
	if ran.Load() != 10 || maxRun.Load() != 2 {
		t.Fatalf("ran %d members, at most %d at once; want 10 and 2", ran.Load(), maxRun.Load())
	}
	es := ends(out.root, out.evs)
	if len(es) != 10 {
		t.Fatalf("%d ends, want 10", len(es))
	}
	for _, e := range es {
		if e.StopReason != event.StopCompleted {
			t.Fatalf("end %+v", e)
		}
	}
}

// Past max_spawns, a spawn fails like a depth-limited one: nothing emitted,
// an error result.
func TestMaxSpawns(t *testing.T) {
	p := mustPool(t, `
agents:
  a:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: b, prompt: one}}]
        - tool_calls: [{name: task, args: {agent_or_team: b, prompt: two}}]
        - tool_calls: [{name: task, args: {agent_or_team: b, prompt: three}}]
        - a done
    tools: [subagent]
  b: {model: {type: test, custom_output_text: b out}}
limits: {max_spawns: 2}
`, pool.Options{})
	res, evs := runPool(t, context.Background(), p, "a", "go")
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "a done" {
		t.Fatalf("root result = %+v", res.Result)
	}
	if n := len(starts(res.SessionID, evs)); n != 2 {
		t.Fatalf("%d starts, want 2", n)
	}
	if n := len(sessionsNamed(t, p.Store(), "b")); n != 2 {
		t.Fatalf("%d sessions of b, want 2", n)
	}
	tc := toolCompletes(res.SessionID, evs, "task")
	if len(tc) != 3 || tc[0].IsError || tc[1].IsError || !tc[2].IsError || !strings.Contains(tc[2].ToolResult, "spawn budget") {
		t.Fatalf("task results = %+v", tc)
	}
	// The budget is per root run: a second run may spawn again.
	res2, evs2 := runPool(t, context.Background(), p, "a", "again")
	if n := len(starts(res2.SessionID, evs2)); n != 2 {
		t.Fatalf("second run: %d starts, want 2", n)
	}
}

// The per-spawn timeout ends the child with stop_reason error.
func TestSpawnTimeout(t *testing.T) {
	p := mustPool(t, `
agents:
  a:
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: slow, prompt: take your time}}]}, a done]}
    tools: [subagent]
  slow:
    model: {type: scripted, turns: [{text: one two three four, delay: 10s}]}
limits: {spawn_timeout: 30ms}
`, pool.Options{})
	start := time.Now()
	res, evs := runPool(t, context.Background(), p, "a", "go")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the timeout did not stop the child (%s)", d)
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "a done" {
		t.Fatalf("root result = %+v", res.Result)
	}
	e := endOf(t, res.SessionID, evs, "slow")
	if e.StopReason != event.StopError || !strings.Contains(e.Error, "spawn timeout") {
		t.Fatalf("end of slow = %+v", e)
	}
	st, _ := p.Store().GetSession(context.Background(), e.ChildSessionID)
	if st.Status != session.StatusError {
		t.Fatalf("stored status = %s", st.Status)
	}
	// Request.Timeout overrides the limit in the Go API.
	h := newHarness(t, spawn.Limits{})
	slow := h.agent("slow", blockingModel(nil, "slow"))
	ctx := context.Background()
	sess := session.Session{ID: id.Descending(id.Session), AgentName: "me", CreatedAt: time.Now()}
	_ = h.store.CreateSession(ctx, sess)
	sink, events := eventtest.Collect()
	inv := mustRoot(t)(h.rt.NewRoot(sess, id.Ascending(id.Run), "", nil, sink))
	child, err := spawn.Spawn(ctx, inv, spawn.Request{Node: slow, Prompt: "x", Timeout: 20 * time.Millisecond})
	h.rt.Release(inv)
	if err != nil || child.Result.StopReason != event.StopError || !errors.Is(child.Result.Err, spawn.ErrTimeout) {
		t.Fatalf("manual spawn with timeout: %+v, %v", child, err)
	}
	if e := endOf(t, sess.ID, events(), "slow"); e.StopReason != event.StopError {
		t.Fatalf("end = %+v", e)
	}
}

// Cancelling the root run cancels every descendant: each open child ends
// aborted and no goroutine survives.
func TestCancelDescendants(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	started := make(chan string, 8)
	h.agent("b", blockingModel(started, "b"))
	h.agent("c", blockingModel(started, "c"))
	h.agent("d", blockingModel(started, "d"))
	tm, _ := team.New(team.Config{Name: "pt", Mode: team.Parallel, Members: []string{"c", "d"}})
	h.add(tm)
	h.agent("a", newFnModel(func(_ context.Context, turn int, _ *model.Request) reply {
		if turn == 0 {
			return reply{calls: []call{
				{name: "task", args: map[string]any{"agent_or_team": "b", "prompt": "bg", "async_mode": true}},
				{name: "task", args: map[string]any{"agent_or_team": "pt", "prompt": "team"}},
			}}
		}
		return reply{text: "a should not finish"}
	}))
	h.agent("root", newFnModel(func(_ context.Context, turn int, _ *model.Request) reply {
		if turn == 0 {
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "a", "prompt": "go"}}}}
		}
		return reply{text: "root should not finish"}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for range 3 {
			<-started
		}
		cancel()
	}()
	out := h.run(ctx, "root", "go")
	if out.res.StopReason != event.StopAborted {
		t.Fatalf("root result = %+v", out.res)
	}
	es := ends(out.root, out.evs)
	if len(es) != 5 {
		t.Fatalf("%d ends, want 5 (a, b, pt, c, d)", len(es))
	}
	for _, e := range es {
		if e.StopReason != event.StopAborted {
			t.Errorf("end of %s: %s (%s)", e.SourceName, e.StopReason, e.Error)
		}
		if h.rt.Running(e.ChildSessionID) {
			t.Errorf("%s still registered", e.SourceName)
		}
		if st, _ := h.store.GetSession(context.Background(), e.ChildSessionID); st.Status != session.StatusAborted {
			t.Errorf("%s stored as %s", e.SourceName, st.Status)
		}
	}
	goleak.VerifyNone(t)
}

// Workers with pass_message_history and reset_history_on_run=false see the
// caller's conversation and their own earlier calls.
func TestWorkerHistory(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts spawn.WorkerOptions
	}{
		{"keep", spawn.WorkerOptions{PassMessageHistory: true, ResetHistoryOnRun: false}},
		{"reset", spawn.WorkerOptions{ResetHistoryOnRun: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, spawn.Limits{})
			w := newFnModel(func(_ context.Context, _ int, req *model.Request) reply {
				return reply{text: "answer to " + req.Messages[len(req.Messages)-1].Text()}
			})
			h.agent("w", w)
			opts := tc.opts
			opts.History = agent.HistoryFrom
			h.agent("boss", newFnModel(func(_ context.Context, turn int, _ *model.Request) reply {
				switch turn {
				case 0:
					return reply{calls: []call{{name: "ask_w", args: map[string]any{"prompt": "first question"}}}}
				case 1:
					return reply{calls: []call{{name: "ask_w", args: map[string]any{"prompt": "second question"}}}}
				}
				return reply{text: "boss done"}
			}), spawn.WorkerTool("w", "", opts))
			out := h.run(context.Background(), "boss", "the boss prompt")
			if out.res.Output != "boss done" {
				t.Fatalf("result = %+v", out.res)
			}
			for _, s := range starts(out.root, out.evs) {
				if s.SpawnMechanism != event.MechanismWorker {
					t.Fatalf("start = %+v", s)
				}
			}
			reqs := w.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d worker requests", len(reqs))
			}
			var texts []string
			for _, m := range reqs[1].Messages {
				texts = append(texts, m.Text())
			}
			all := strings.Join(texts, "|")
			keep := tc.name == "keep"
			if got := strings.Contains(all, "the boss prompt"); got != keep {
				t.Errorf("second call sees the caller's prompt: %v (messages %q)", got, texts)
			}
			if got := strings.Contains(all, "answer to first question"); got != keep {
				t.Errorf("second call sees its first answer: %v (messages %q)", got, texts)
			}
			if texts[len(texts)-1] != "second question" {
				t.Errorf("last message %q", texts[len(texts)-1])
			}
			if !keep && len(texts) != 1 {
				t.Errorf("reset worker got history %q", texts)
			}
		})
	}
}

// An unknown agent in task gives an error result listing the nodes.
func TestUnknownAgent(t *testing.T) {
	p := mustPool(t, `
agents:
  a:
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: nobody, prompt: hi}}]}, a done]}
    tools: [subagent]
  helper: {model: test}
teams:
  crew: {mode: parallel, members: [helper]}
`, pool.Options{})
	res, evs := runPool(t, context.Background(), p, "a", "go")
	if res.Result.Output != "a done" {
		t.Fatalf("root result = %+v", res.Result)
	}
	if n := len(starts(res.SessionID, evs)); n != 0 {
		t.Fatalf("%d starts for an unknown agent", n)
	}
	tc := toolCompletes(res.SessionID, evs, "task")
	if len(tc) != 1 || !tc[0].IsError || !contains(tc[0].ToolResult, `"nobody"`, "available", "a", "helper", "crew") {
		t.Fatalf("task result = %+v", tc)
	}
	all, _ := p.Store().ListSessions(context.Background(), session.ListOptions{})
	if len(all) != 1 {
		t.Fatalf("%d sessions", len(all))
	}
}

// list_available_nodes filters by type and by idleness.
func TestListAvailableNodes(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	gate := make(chan struct{})
	h.agent("slow", newFnModel(func(ctx context.Context, _ int, _ *model.Request) reply {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return reply{text: "slow done"}
	}))
	h.agent("idle", textModel("idle"))
	tm, _ := team.New(team.Config{Name: "crew", Description: "the crew", Mode: team.Sequential, Members: []string{"idle"}})
	h.add(tm)
	var (
		mu      sync.Mutex
		results = map[int][]model.Part{}
	)
	h.agent("root", newFnModel(func(_ context.Context, turn int, req *model.Request) reply {
		mu.Lock()
		defer mu.Unlock()
		results[turn] = toolResults(req.Messages)
		switch turn {
		case 0:
			return reply{calls: []call{
				{name: "list_available_nodes", args: map[string]any{"node_type": "team"}},
				{name: "list_available_nodes", args: map[string]any{"node_type": "agent"}},
				{name: "list_available_nodes"},
			}}
		case 1:
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "slow", "prompt": "x", "async_mode": true}}}}
		case 2:
			return reply{calls: []call{{name: "list_available_nodes", args: map[string]any{"only_idle": true}}}}
		case 3:
			close(gate)
			return reply{text: "waiting"}
		}
		return reply{text: "done"}
	}))
	out := h.run(context.Background(), "root", "go")
	if out.res.Output != "done" {
		t.Fatalf("result = %+v", out.res)
	}
	names := func(p model.Part) []string {
		var infos []spawn.NodeInfo
		if err := json.Unmarshal([]byte(p.Text), &infos); err != nil {
			t.Fatalf("decode %q: %v", p.Text, err)
		}
		var out []string
		for _, i := range infos {
			out = append(out, i.Name)
		}
		return out
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("teams", names(results[1][0]), []string{"crew"})
	check("agents", names(results[1][1]), []string{"idle", "root", "slow"})
	check("all", names(results[1][2]), []string{"crew", "idle", "root", "slow"})
	check("only idle while slow runs", names(results[3][0]), []string{"crew", "idle", "root"})
}

// The same pool (the same agent instances) serves concurrent runs in
// different sessions.
func TestConcurrentRuns(t *testing.T) {
	p, err := pool.New(config.Default(), pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Go(func() {
			res, evs := runPool(t, context.Background(), p, "", fmt.Sprintf("question %d", i))
			ids[i] = res.SessionID
			if res.Result.StopReason != event.StopCompleted {
				t.Errorf("run %d: %+v", i, res.Result)
			}
			if got := len(starts(res.SessionID, evs)); got != 4 {
				t.Errorf("run %d: %d starts, want 4", i, got)
			}
			for _, pe := range unwrapAll(res.SessionID, evs) {
				if rs, ok := pe.ev.(event.RunStarted); ok && pe.session == res.SessionID && rs.SessionID != res.SessionID {
					t.Errorf("run %d: foreign run_started %+v", i, rs)
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(ids)
	if len(slices.Compact(ids)) != n {
		t.Fatal("runs shared a session")
	}
	roots, _ := p.Store().ListSessions(context.Background(), session.ListOptions{RootsOnly: true})
	if len(roots) != n {
		t.Fatalf("%d roots, want %d", len(roots), n)
	}
	for _, r := range roots {
		sub, err := session.Subtree(context.Background(), p.Store(), r.ID)
		if err != nil || len(sub) != 5 {
			t.Fatalf("subtree of %s: %d sessions, %v", r.ID, len(sub), err)
		}
		// The prompt of the run reached the whole subtree's root only.
		msgs, _ := p.Store().Messages(context.Background(), r.ID)
		if len(msgs) == 0 || !strings.HasPrefix(msgs[0].Text(), "question ") {
			t.Fatalf("root conversation %+v", msgs)
		}
	}
}

// Spawns through the Go API have mechanism manual, sync or async.
func TestManualSpawn(t *testing.T) {
	p, err := pool.New(config.Default(), pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess := session.Session{ID: id.Descending(id.Session), AgentName: "my code", SourceType: event.SourceAgent, Status: session.StatusRunning, CreatedAt: time.Now()}
	if err := p.Store().CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	sink, events := eventtest.Collect()
	runID := id.Ascending(id.Run)
	sink.Emit(event.RunStarted{SessionID: sess.ID, RunID: runID, AgentName: "my code"})
	inv := mustRoot(t)(p.Runtime().NewRoot(sess, runID, "", nil, sink))
	critic, _ := p.Node("critic")
	child, err := spawn.Spawn(ctx, inv, spawn.Request{Node: critic, Prompt: "review", Description: "manual review"})
	if err != nil {
		t.Fatal(err)
	}
	if child.Result.StopReason != event.StopCompleted || !strings.HasPrefix(child.Result.Output, "Review:") {
		t.Fatalf("manual child = %+v", child)
	}
	research, _ := p.Node("research")
	bg, err := spawn.Spawn(ctx, inv, spawn.Request{Node: research, Prompt: "dig", Async: true})
	if err != nil || bg.TaskID == "" {
		t.Fatalf("async manual spawn: %+v, %v", bg, err)
	}
	left := p.Runtime().Release(inv)
	if len(left) != 1 || !strings.Contains(left[0], bg.TaskID) {
		t.Fatalf("undelivered injections = %q", left)
	}
	sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", FinishReason: "stop"}})
	evs := events()
	if err := eventtest.CheckInvariants(sess.ID, evs); err != nil {
		t.Fatal(err)
	}
	var direct []event.SpawnSessionStart
	for _, e := range evs {
		if s, ok := e.(event.SpawnSessionStart); ok {
			direct = append(direct, s)
		}
	}
	if len(direct) != 2 || direct[0].SpawnMechanism != event.MechanismManual || direct[0].RunMode != event.RunModeSync ||
		direct[1].SpawnMechanism != event.MechanismManual || direct[1].RunMode != event.RunModeAsync || direct[1].TaskID != bg.TaskID {
		t.Fatalf("manual starts = %+v", direct)
	}
	if direct[0].Metadata["prompt"] != "review" || direct[0].Metadata["max_depth"] != spawn.DefaultMaxDepth || direct[0].Description != "manual review" {
		t.Fatalf("start metadata = %+v", direct[0])
	}
	if e := ends(sess.ID, evs)[bg.SessionID]; e.StopReason != event.StopCompleted {
		t.Fatalf("async end = %+v", e)
	}
}

// A child is stored and registered when its start is emitted, and what a
// listener injects then reaches the child's first model request
// (invariant 3).
func TestReadyBeforeStart(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	leaf := textModel("leaf done")
	h.agent("leaf", leaf)
	mid := newFnModel(func(_ context.Context, turn int, _ *model.Request) reply {
		if turn == 0 {
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "leaf", "prompt": "go", "async_mode": true}}}}
		}
		return reply{text: "mid done"}
	})
	h.agent("mid", mid)
	h.agent("root", newFnModel(func(_ context.Context, turn int, _ *model.Request) reply {
		if turn == 0 {
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "mid", "prompt": "go"}}}}
		}
		return reply{text: "root done"}
	}))
	ctx := context.Background()
	sess := session.Session{ID: id.Descending(id.Session), AgentName: "root", SourceType: event.SourceAgent, CreatedAt: time.Now()}
	if err := h.store.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	collect, events := eventtest.Collect()
	var checked atomic.Int64
	sink := event.SinkFunc(func(e event.Event) {
		collect.Emit(e)
		_, inner := event.Unwrap(sess.ID, e)
		s, ok := inner.(event.SpawnSessionStart)
		if !ok {
			return
		}
		stored, err := h.store.GetSession(ctx, s.ChildSessionID)
		if err != nil || stored.ParentID != s.ParentSessionID || stored.Depth != s.Depth || stored.Status != session.StatusRunning {
			t.Errorf("child %s at its start: stored %+v, %v", s.SourceName, stored, err)
		}
		if !h.rt.Running(s.ChildSessionID) {
			t.Errorf("child %s not registered at its start", s.SourceName)
		}
		if err := h.rt.Inject(s.ChildSessionID, "note for "+s.SourceName); err != nil {
			t.Errorf("inject into %s: %v", s.SourceName, err)
		}
		checked.Add(1)
	})
	root := h.nodes["root"]
	inv := mustRoot(t)(h.rt.NewRoot(sess, id.Ascending(id.Run), "go", nil, sink))
	res := root.Run(spawn.WithInvocation(ctx, inv), inv)
	h.rt.Release(inv)
	if res.Output != "root done" || checked.Load() != 2 {
		t.Fatalf("result %+v, %d starts checked", res, checked.Load())
	}
	if err := eventtest.CheckInvariants(sess.ID, events()); err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]*fnModel{"mid": mid, "leaf": leaf} {
		reqs := m.requests()
		if len(reqs) == 0 {
			t.Fatalf("%s made no request", name)
		}
		found := false
		for _, msg := range reqs[0].Messages {
			if msg.Synthetic && msg.Text() == "note for "+name {
				found = true
			}
		}
		if !found {
			t.Errorf("first request of %s lacks the injected note: %+v", name, reqs[0].Messages)
		}
	}
	if h.rt.Inject(sess.ID, "late") == nil {
		t.Error("inject into a released root succeeded")
	}
}
