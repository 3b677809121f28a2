package durablewire_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/durablewire"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// fakeEnv is an Env with every seam of this package; it notes which of
// them a run used.
type fakeEnv struct {
	mu   sync.Mutex
	used []string
	// An async spawn's task and the parent's side that reports its end.
	task *spawn.Task
	kids spawn.Children
}

var (
	_ spawn.Env               = (*fakeEnv)(nil)
	_ durablewire.SpawnBudget = (*fakeEnv)(nil)
	_ durablewire.HookEnv     = (*fakeEnv)(nil)
	_ durablewire.ToolsetEnv  = (*fakeEnv)(nil)
)

func (e *fakeEnv) note(s string) {
	e.mu.Lock()
	e.used = append(e.used, s)
	e.mu.Unlock()
}

func (e *fakeEnv) seen() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.used, " ")
}

func (e *fakeEnv) Turn(_ context.Context, _ *spawn.Invocation, _ string, _ *model.Request) (spawn.Turn, error) {
	e.note("turn")
	return spawn.Turn{Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "done"}}}, Finish: "stop"}, nil
}

func (e *fakeEnv) Tool(context.Context, *spawn.Invocation, string, tool.Call) tool.Result {
	e.note("tool")
	return tool.Result{Content: "ran"}
}

func (e *fakeEnv) Spawn(_ context.Context, _ *spawn.Invocation, req spawn.Request, kids spawn.Children) (spawn.Child, error) {
	e.note("spawn:" + req.Node.Name())
	if req.Async {
		e.task, e.kids = kids.StartTask("tsk_1", "ses_async", req.Node.Name()), kids
		return spawn.Child{SessionID: "ses_async", TaskID: e.task.ID}, nil
	}
	kids.AddTotals(event.Usage{InputTokens: 7, OutputTokens: 3}, 0.5)
	return spawn.Child{SessionID: "ses_child"}, nil
}

func (e *fakeEnv) Parallel(ctx context.Context, n int, fn func(context.Context, int)) {
	for i := range n {
		fn(ctx, i)
	}
}

func (e *fakeEnv) Now(context.Context) time.Time { return time.Unix(1_700_000_000, 0) }

func (e *fakeEnv) NewID(_ context.Context, prefix string) string { return prefix + "_fake" }

func (e *fakeEnv) Await(_ context.Context, cond func() bool) {
	if !cond() {
		panic("fakeEnv: a wait that nothing can end")
	}
}

func (e *fakeEnv) TakeSpawns(_ context.Context, _ *spawn.Invocation, n, limit int) (int, bool, error) {
	e.note("take")
	return limit, true, nil
}

func (e *fakeEnv) ReturnSpawns(context.Context, *spawn.Invocation, int) { e.note("return") }

func (e *fakeEnv) RunHook(_ context.Context, _ *spawn.Invocation, _, point string, _, _ any) error {
	e.note("hook:" + point)
	return nil
}

func (e *fakeEnv) ListToolsets(context.Context, *spawn.Invocation, string) ([]agent.ToolsetList, error) {
	e.note("toolsets")
	return []agent.ToolsetList{{Name: "set", Tools: []tool.Info{{Name: "remote"}}}}, nil
}

// noHooks is an agent.Hooks that answers every point with its default.
type noHooks struct{}

func (noHooks) PromptSubmit(context.Context, agent.PromptInfo) agent.PromptDecision {
	return agent.PromptDecision{}
}
func (noHooks) ModelRequest(_ context.Context, _, _ string, r *model.Request) *model.Request {
	return r
}
func (noHooks) PreTool(context.Context, agent.ToolInfo) agent.ToolDecision {
	return agent.ToolDecision{Action: agent.ToolAllow}
}
func (noHooks) PostTool(_ context.Context, _ agent.ToolInfo, r tool.Result) tool.Result { return r }
func (noHooks) TurnStop(context.Context, agent.TurnStopInfo) agent.StopDecision {
	return agent.StopDecision{}
}

// failingSet is a toolset that must not be asked under an Env.
type failingSet struct{ t *testing.T }

func (s failingSet) Name() string { return "set" }
func (s failingSet) Tools(context.Context) ([]tool.Tool, error) {
	s.t.Error("a toolset was asked in the run under an Env")
	return nil, nil
}

// spawn and agent find the seams of an Env by their method sets, not by
// these interfaces: a run under an Env that implements them goes through
// each (hooks, toolset listing, the spawn budget), so that a seam renamed
// on one side only fails here rather than running the durable engine's
// runs as local ones.
func TestSeamsReachTheRun(t *testing.T) {
	m, err := testmodel.New(testmodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Name: "main", Model: m, Hooks: noHooks{}, Toolsets: []tool.Toolset{failingSet{t}}})
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	rt := spawn.NewRuntime(spawn.Config{Store: st, Lookup: func(name string) (spawn.Node, bool) { return a, name == "main" }})
	ctx := context.Background()
	sess := session.Session{ID: "ses_root", AgentName: "main", Status: session.StatusRunning, CreatedAt: time.Unix(1, 0)}
	if err := st.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	env := &fakeEnv{}
	inv := spawn.NewEnvInvocation(rt, env, sess, "run_1", "hello", "", nil, event.Discard)
	res := a.Run(ctx, inv)
	if res.Err != nil || res.Output != "done" {
		t.Fatalf("result %+v", res)
	}
	got := env.seen()
	for _, want := range []string{"hook:" + agent.HookPromptSubmit, "toolsets", "turn", "hook:" + agent.HookTurnStop} {
		if !strings.Contains(got, want) {
			t.Errorf("the run did not use %q of the Env: %q", want, got)
		}
	}

	if _, err := spawn.Spawn(ctx, inv, spawn.Request{Node: a, Prompt: "child"}); err != nil {
		t.Fatal(err)
	}
	if got := env.seen(); !strings.HasSuffix(got, "take spawn:main") {
		t.Errorf("a spawn under the Env did not take from its budget first: %q", got)
	}
}

// An Env that runs children elsewhere reports them to the parent through
// the spawn.Children its Spawn is given: a sync child's totals roll up
// into the parent's, an async child is pending from StartTask and its end
// reaches the parent's inbox before it stops being pending.
func TestChildrenReportToTheParent(t *testing.T) {
	m, err := testmodel.New(testmodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Name: "main", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	rt := spawn.NewRuntime(spawn.Config{Store: memory.New()})
	env := &fakeEnv{}
	inv := spawn.NewEnvInvocation(rt, env, session.Session{ID: "ses_root", AgentName: "main"}, "run_1", "hi", "", nil, event.Discard)
	ctx := context.Background()

	if _, err := spawn.Spawn(ctx, inv, spawn.Request{Node: a, Prompt: "sync"}); err != nil {
		t.Fatal(err)
	}
	if u, cost := inv.ChildTotals(); u.InputTokens != 7 || u.OutputTokens != 3 || cost != 0.5 {
		t.Errorf("child totals %+v, %v; want 7+3 tokens, 0.5", u, cost)
	}

	c, err := spawn.Spawn(ctx, inv, spawn.Request{Node: a, Prompt: "async", Async: true})
	if err != nil || c.TaskID != "tsk_1" {
		t.Fatalf("async spawn: %+v, %v", c, err)
	}
	if n := inv.PendingAsync(); n != 1 {
		t.Fatalf("pending after StartTask: %d", n)
	}
	env.kids.EndTask(env.task, spawn.Result{Output: "async done", StopReason: event.StopCompleted})
	if n, inbox := inv.PendingAsync(), inv.Inbox().Len(); n != 0 || inbox != 1 {
		t.Errorf("after EndTask: %d pending, %d in the inbox; want 0 and 1", n, inbox)
	}
}

// CallHook dispatches a hook call by point to the agent's Hooks, and says
// which point a bad call names.
func TestCallHook(t *testing.T) {
	ctx := context.Background()
	in, _ := json.Marshal(agent.ToolInfo{Agent: "main", ToolName: "bash"})
	out, err := durablewire.CallHook(ctx, noHooks{}, agent.HookPreTool, in)
	if d, ok := out.(agent.ToolDecision); err != nil || !ok || !d.Allows() {
		t.Errorf("pre-tool: %#v, %v", out, err)
	}
	if _, err := durablewire.CallHook(ctx, noHooks{}, "tools/nope", in); err == nil || !strings.Contains(err.Error(), `unknown hook point "tools/nope"`) {
		t.Errorf("unknown point: %v", err)
	}
	if _, err := durablewire.CallHook(ctx, noHooks{}, agent.HookTurnStop, []byte("{")); err == nil || !strings.Contains(err.Error(), "hook point agent/turn-stop: decode the payload") {
		t.Errorf("bad payload: %v", err)
	}
}
