package durable

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/team"
)

// asyncPool: boss starts a background task on the worker, answers
// "waiting", gets the task's result in its next request and answers with
// it.
func asyncPool(t *testing.T, st session.Store, limits config.Limits) *pool.Pool {
	t.Helper()
	boss := scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "task", Args: map[string]any{"agent_or_team": "worker", "prompt": "6*7?", "async_mode": true}}}},
		testmodel.Turn{Text: "waiting"},
		testmodel.Turn{Text: "the worker said 42"},
	)
	p, err := pool.Build(pool.Config{
		Agents: []pool.AgentSpec{
			{Name: "boss", Model: boss, Builtin: []string{"subagent"}},
			// Slow enough that the boss answers "waiting" before the
			// result is in, in this process and under the engine.
			{Name: "worker", Model: scripted(t, testmodel.Turn{Text: "42", Delay: 500 * time.Millisecond})},
		},
		Default: "boss",
		Limits:  limits,
	}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// An async task under the engine: the call returns its task at once, the
// child's result reaches the parent's next model request through its
// inbox, the parent ends after its child, and the stream is the one the
// same run makes in this process.
func TestWorkflowAsyncTaskAsInProcess(t *testing.T) {
	st := memory.New()
	p := asyncPool(t, st, config.Limits{})
	root, out, evs := runWorkflow(t, p, "boss", "go", nil)
	if out.StopReason != event.StopCompleted || out.Output != "the worker said 42" {
		t.Fatalf("end = %+v", out)
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	var start event.SpawnSessionStart
	for _, e := range evs {
		if s, ok := e.(event.SpawnSessionStart); ok {
			start = s
		}
	}
	if start.RunMode != event.RunModeAsync || !strings.HasPrefix(start.TaskID, "tsk") && start.TaskID == "" {
		t.Fatalf("start = %+v", start)
	}
	msgs, err := st.Messages(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	var toolResult, delivered string
	for _, m := range msgs {
		for _, part := range m.Parts {
			if part.Kind == model.PartToolResult {
				toolResult = part.Text
			}
		}
		if m.Role == model.RoleUser && m.Synthetic {
			delivered = m.Text()
		}
	}
	if !strings.Contains(toolResult, `"task_id":"`+start.TaskID+`"`) || !strings.Contains(toolResult, start.ChildSessionID) {
		t.Errorf("the task call's result = %q, want its task and session", toolResult)
	}
	if want := "Background task " + start.TaskID; !strings.HasPrefix(delivered, want) || !strings.HasSuffix(delivered, "completed:\n42") {
		t.Errorf("delivered = %q", delivered)
	}

	ref := asyncPool(t, memory.New(), config.Limits{})
	sink, got := eventtest.Collect()
	res, err := ref.RunSink(context.Background(), pool.RunRequest{Node: "boss", Prompt: "go"}, sink)
	if err != nil || res.Result.Output != out.Output {
		t.Fatalf("in process: %+v, %v", res.Result, err)
	}
	a, b := shape(root, evs), shape(res.SessionID, got())
	if strings.Join(sorted(a), ",") != strings.Join(sorted(b), ",") {
		t.Errorf("streams differ:\ntemporal:   %v\nin process: %v", a, b)
	}
}

// sleeper is a node that runs until its run is cancelled.
type sleeper struct{}

func (sleeper) Name() string                 { return "sleeper" }
func (sleeper) Description() string          { return "waits" }
func (sleeper) SourceType() event.SourceType { return event.SourceAgent }
func (sleeper) ModelID() string              { return "" }
func (sleeper) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	if inv.Env != nil {
		inv.Env.Await(ctx, func() bool { return ctx.Err() != nil })
	} else {
		<-ctx.Done()
	}
	return spawn.Result{Err: context.Cause(ctx)}
}

// The spawn timeout (limits.spawn_timeout) ends a child that runs longer
// with stop reason error and the timeout as its error, as in this
// process (the workflow's timer: the test's clock skips the ten minutes).
func TestWorkflowSpawnTimeout(t *testing.T) {
	st := memory.New()
	boss := scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "ask_sleeper", Args: map[string]any{"prompt": "wait"}}}},
		testmodel.Turn{Text: "gave up"},
	)
	p, err := pool.Build(pool.Config{
		Agents:  []pool.AgentSpec{{Name: "boss", Model: boss, Workers: []pool.WorkerSpec{{Name: "sleeper"}}}},
		Nodes:   []spawn.Node{sleeper{}},
		Default: "boss",
		Limits:  config.Limits{SpawnTimeout: 10 * time.Minute},
	}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	root, out, evs := runWorkflow(t, p, "boss", "go", nil)
	if out.StopReason != event.StopCompleted || out.Output != "gave up" {
		t.Fatalf("end = %+v", out)
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	var end event.SpawnSessionEnd
	for _, e := range evs {
		if s, ok := e.(event.SpawnSessionEnd); ok {
			end = s
		}
	}
	if end.StopReason != event.StopError || !strings.Contains(end.Error, spawn.ErrTimeout.Error()+" after 10m0s") {
		t.Errorf("end = %+v", end)
	}
	child, err := st.GetSession(context.Background(), end.ChildSessionID)
	if err != nil || child.Status != session.StatusFromStop(event.StopError) {
		t.Errorf("child record = %+v, %v", child, err)
	}
}

// max_children: the second of two children asked for in one turn waits
// for the first to end, as in this process.
func TestWorkflowMaxChildren(t *testing.T) {
	boss := scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{
			{Name: "ask_worker", Args: map[string]any{"prompt": "one"}},
			{Name: "ask_worker", Args: map[string]any{"prompt": "two"}},
		}},
		testmodel.Turn{Text: "both done"},
	)
	p, err := pool.Build(pool.Config{
		Agents: []pool.AgentSpec{
			{Name: "boss", Model: boss, Workers: []pool.WorkerSpec{{Name: "worker"}}},
			{Name: "worker", Model: scripted(t, testmodel.Turn{Text: "ok"})},
		},
		Default: "boss",
		Limits:  config.Limits{MaxChildren: 1},
	}, pool.Options{Store: memory.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	root, out, evs := runWorkflow(t, p, "boss", "go", nil)
	if out.StopReason != event.StopCompleted {
		t.Fatalf("end = %+v", out)
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	var order []string
	for _, e := range evs {
		switch e.(type) {
		case event.SpawnSessionStart:
			order = append(order, "start")
		case event.SpawnSessionEnd:
			order = append(order, "end")
		}
	}
	if got := strings.Join(order, ","); got != "start,end,start,end" {
		t.Errorf("children = %s, want one at a time", got)
	}
}

// max_spawns counts the spawns of the whole tree, as in this process: the
// boss's second delegation is refused once its first one's child has
// spawned too.
func TestWorkflowMaxSpawnsCountsTheTree(t *testing.T) {
	build := func() *pool.Pool {
		boss := scripted(t,
			testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "ask_mid", Args: map[string]any{"prompt": "one"}}}},
			testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "ask_mid", Args: map[string]any{"prompt": "two"}}}},
			testmodel.Turn{Text: "done"},
		)
		mid := scripted(t,
			testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "ask_leaf", Args: map[string]any{"prompt": "leaf"}}}},
			testmodel.Turn{Text: "mid done"},
		)
		p, err := pool.Build(pool.Config{
			Agents: []pool.AgentSpec{
				{Name: "boss", Model: boss, Workers: []pool.WorkerSpec{{Name: "mid"}}},
				{Name: "mid", Model: mid, Workers: []pool.WorkerSpec{{Name: "leaf"}}},
				{Name: "leaf", Model: scripted(t, testmodel.Turn{Text: "leaf"})},
			},
			Default: "boss",
			Limits:  config.Limits{MaxSpawns: 2},
		}, pool.Options{Store: memory.New()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	root, out, evs := runWorkflow(t, build(), "boss", "go", nil)
	if out.StopReason != event.StopCompleted {
		t.Fatalf("end = %+v", out)
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	sink, got := eventtest.Collect()
	res, err := build().RunSink(context.Background(), pool.RunRequest{Node: "boss", Prompt: "go"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	s, r := countSpawns(root, evs)
	ws, wr := countSpawns(res.SessionID, got())
	if s != 2 || r != 1 || s != ws || r != wr {
		t.Errorf("temporal: %d spawns, %d refused; in process: %d, %d; want 2 and 1", s, r, ws, wr)
	}
}

// countSpawns counts the spawn_session_start and spawn_refused events of
// root's stream.
func countSpawns(root string, evs []event.Event) (starts, refused int) {
	for _, e := range evs {
		_, inner := event.Unwrap(root, e)
		switch inner := inner.(type) {
		case event.SpawnSessionStart:
			starts++
		case event.Custom:
			if inner.EventType == spawn.EventSpawnRefused {
				refused++
			}
		}
	}
	return starts, refused
}

// descendants counts the sessions under root in st.
func descendants(t *testing.T, st session.Store, root string) int {
	t.Helper()
	kids, err := st.ListSessions(context.Background(), session.ListOptions{ParentID: root})
	if err != nil {
		t.Fatal(err)
	}
	n := len(kids)
	for _, k := range kids {
		n += descendants(t, st, k.ID)
	}
	return n
}

// fanOutPool: boss asks three mids at once, each of which asks a leaf:
// six spawns, under a budget of max_spawns.
func fanOutPool(t *testing.T, st session.Store, maxSpawns int) *pool.Pool {
	t.Helper()
	boss := scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{
			{Name: "ask_mid", Args: map[string]any{"prompt": "one"}},
			{Name: "ask_mid", Args: map[string]any{"prompt": "two"}},
			{Name: "ask_mid", Args: map[string]any{"prompt": "three"}},
		}},
		testmodel.Turn{Text: "done"},
	)
	// The mids think long enough for all three to be spawned before any
	// asks its leaf, in this process too: the leaves are what is refused.
	mid := scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "ask_leaf", Args: map[string]any{"prompt": "leaf"}}}, Delay: 300 * time.Millisecond},
		testmodel.Turn{Text: "mid done"},
	)
	p, err := pool.Build(pool.Config{
		Agents: []pool.AgentSpec{
			{Name: "boss", Model: boss, Workers: []pool.WorkerSpec{{Name: "mid"}}},
			{Name: "mid", Model: mid, Workers: []pool.WorkerSpec{{Name: "leaf"}}},
			{Name: "leaf", Model: scripted(t, testmodel.Turn{Text: "leaf"})},
		},
		Default: "boss",
		Limits:  config.Limits{MaxSpawns: maxSpawns},
	}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// max_spawns is exact for children that run at the same time: of the six
// spawns of three parallel delegations whose children delegate again,
// exactly max_spawns are made (in the store too) and the rest are refused
// with spawn_refused events, in the mids' streams, as in this process.
func TestWorkflowMaxSpawnsParallelIsExact(t *testing.T) {
	const maxSpawns = 4
	st := memory.New()
	root, out, evs := runWorkflow(t, fanOutPool(t, st, maxSpawns), "boss", "go", nil)
	if out.StopReason != event.StopCompleted {
		t.Fatalf("end = %+v", out)
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	ref := memory.New()
	sink, got := eventtest.Collect()
	res, err := fanOutPool(t, ref, maxSpawns).RunSink(context.Background(), pool.RunRequest{Node: "boss", Prompt: "go"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	s, r := countSpawns(root, evs)
	ws, wr := countSpawns(res.SessionID, got())
	if s != maxSpawns || r != 6-maxSpawns || s != ws || r != wr {
		t.Errorf("temporal: %d spawns, %d refused; in process: %d, %d; want %d and %d", s, r, ws, wr, maxSpawns, 6-maxSpawns)
	}
	if n, wn := descendants(t, st, root), descendants(t, ref, res.SessionID); n != maxSpawns || wn != maxSpawns {
		t.Errorf("child sessions stored: temporal %d, in process %d; want %d", n, wn, maxSpawns)
	}
	a, b := shape(root, evs), shape(res.SessionID, got())
	if strings.Join(sorted(a), ",") != strings.Join(sorted(b), ",") {
		t.Errorf("streams differ:\ntemporal:   %v\nin process: %v", a, b)
	}
}

// Engine.MaxInFlight: a parallel team of 12 members under a window of 3
// has at most 3 child workflows running at once, and every member runs;
// with the default window (500) more than 3 run at once.
func TestWorkflowMaxInFlight(t *testing.T) {
	members := make([]string, 12)
	for i := range members {
		members[i] = "worker"
	}
	build := func() *pool.Pool {
		p, err := pool.Build(pool.Config{
			Agents:  []pool.AgentSpec{{Name: "worker", Model: scripted(t, testmodel.Turn{Text: "ok"})}},
			Teams:   []pool.TeamSpec{{Name: "crew", Mode: team.Parallel, Members: members}},
			Default: "crew",
			Limits:  config.Limits{MaxChildren: 100, MaxSpawns: 100},
		}, pool.Options{Store: memory.New()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		return p
	}
	for _, window := range []int{3, 0} {
		p := build()
		eng := engineFor(p)
		eng.MaxInFlight = window
		root, out, evs := runEngine(t, eng, p, "crew", "go", nil)
		if out.StopReason != event.StopCompleted {
			t.Fatalf("window %d: end = %+v", window, out)
		}
		if err := eventtest.CheckInvariants(root, evs); err != nil {
			t.Fatalf("window %d: invariants: %v", window, err)
		}
		running, most, ended := 0, 0, 0
		for _, e := range evs {
			switch x := e.(type) {
			case event.SpawnSessionStart:
				running++
				most = max(most, running)
			case event.SpawnSessionEnd:
				running--
				if x.StopReason == event.StopCompleted {
					ended++
				}
			}
		}
		if (window > 0 && most != window) || (window == 0 && most <= 3) || ended != len(members) {
			t.Errorf("window %d: %d members ran at most at once, %d of %d completed", window, most, ended, len(members))
		}
	}
}

// A parallel team whose joined answers are larger than MaxResultText:
// what travels through Temporal (every activity's input, the workflow's
// result) stays bounded, the team's stored answer and output are cut with
// a note, and each member's whole answer is in its own session.
func TestWorkflowBoundsLargeResults(t *testing.T) {
	const members, answer = 8, 100 << 10 // 800 KiB joined
	names := make([]string, members)
	for i := range names {
		names[i] = "worker"
	}
	long := strings.Repeat("x", answer)
	st := memory.New()
	p, err := pool.Build(pool.Config{
		Agents:  []pool.AgentSpec{{Name: "worker", Model: scripted(t, testmodel.Turn{Text: long})}},
		Teams:   []pool.TeamSpec{{Name: "crew", Mode: team.Parallel, Members: names}},
		Default: "crew",
	}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	var mu sync.Mutex
	largest, largestKind := 0, ""
	root, out, evs := runWorkflow(t, p, "crew", "go", func(env *testsuite.TestWorkflowEnvironment) {
		env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
			var raw json.RawMessage
			if err := args.Get(&raw); err != nil {
				t.Errorf("activity %s: %v", info.ActivityType.Name, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if len(raw) > largest {
				largest, largestKind = len(raw), info.ActivityType.Name
			}
		})
	})
	if out.StopReason != event.StopCompleted {
		t.Fatalf("end = %+v", out.StopReason)
	}
	result, _ := json.Marshal(out)
	// At most maxPending of events and a bounded output; unbounded, the
	// team's End carried 1.24 MB (the members' ends, its stream_complete
	// and its output).
	const limit = maxPending + MaxResultText + 64<<10
	if largest > limit || len(result) > MaxResultText+64<<10 {
		t.Errorf("largest activity input %d bytes (%s), workflow result %d bytes; want at most %d and %d", largest, largestKind, len(result), limit, MaxResultText+64<<10)
	}
	if !strings.Contains(out.Output, "[cut: ") {
		t.Errorf("the team's output (%d bytes) has no note of the cut", len(out.Output))
	}
	var ends int
	for _, e := range evs {
		sid, inner := event.Unwrap(root, e)
		switch x := inner.(type) {
		case event.StreamComplete:
			if sid == root && (len(x.Message.Content) > MaxResultText+1024 || !strings.Contains(x.Message.Content, "[cut: ")) {
				t.Errorf("the team's stored answer: %d bytes, want it cut", len(x.Message.Content))
			}
		case event.SpawnSessionEnd:
			if sid != root {
				continue
			}
			ends++
			msgs, err := st.Messages(context.Background(), x.ChildSessionID)
			if err != nil || len(msgs) == 0 || msgs[len(msgs)-1].Text() != long {
				t.Errorf("member %s: its whole answer is not in its session (%d messages, %v)", x.ChildSessionID, len(msgs), err)
			}
		}
	}
	if ends != members {
		t.Errorf("%d members ended, want %d", ends, members)
	}
}
