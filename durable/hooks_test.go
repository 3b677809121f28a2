package durable

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/tool"
)

type noArgs struct{}

// Under the engine the pool's hooks run in the Hook activity, on the
// worker: a tools/pre-execute seam denies a call, subagent/start injects
// into the child's first request, and subagent/end, session/start and
// session/end fire once each, with the payloads they have in this process.
func TestWorkflowHooks(t *testing.T) {
	reg := hook.New(hook.Options{})
	t.Cleanup(func() { _ = reg.Close(context.Background()) })
	var (
		mu  sync.Mutex
		got []string
	)
	note := func(s string) {
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	}
	reg.OnPreExecute.Use(func(ctx context.Context, c hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
		note("pre:" + c.ToolName)
		if c.ToolName == "rm" {
			return agent.ToolDecision{Action: agent.ToolDeny, Reason: "not here"}
		}
		return next(ctx, c)
	})
	reg.OnSubagentStart.Register(func(ctx context.Context, e hook.SubagentStart) error {
		note("subagent-start:" + e.Name)
		return hook.Inject(ctx, e.ID, "a word from the start hook")
	})
	reg.OnSubagentEnd.Register(func(ctx context.Context, e hook.SubagentEnd) error {
		note("subagent-end:" + e.Name + ":" + string(e.StopReason))
		return nil
	})
	reg.OnSessionStart.Register(func(ctx context.Context, e hook.SessionStart) error {
		note("session-start:" + e.Source)
		return nil
	})
	reg.OnSessionEnd.Register(func(ctx context.Context, e hook.SessionEnd) error {
		note("session-end:" + string(e.Reason))
		return nil
	})

	st := memory.New()
	ran := false
	rm := tool.New("rm", "removes", func(context.Context, tool.Call, noArgs) (tool.Result, error) {
		ran = true
		return tool.Result{Content: "removed"}, nil
	})
	boss := scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "rm", Args: map[string]any{}}}},
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "ask_worker", Args: map[string]any{"prompt": "hi"}}}},
		testmodel.Turn{Text: "done"},
	)
	p, err := pool.Build(pool.Config{
		Agents: []pool.AgentSpec{
			{Name: "boss", Model: boss, Tools: []tool.Tool{rm}, Workers: []pool.WorkerSpec{{Name: "worker"}}},
			{Name: "worker", Model: scripted(t, testmodel.Turn{Text: "hello"})},
		},
		Default: "boss",
	}, pool.Options{Store: st, Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	root, out, evs := runWorkflow(t, p, "boss", "go", nil)
	if out.StopReason != event.StopCompleted || out.Output != "done" {
		t.Fatalf("end = %+v", out)
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	if ran {
		t.Error("the denied tool ran")
	}
	var denied event.ToolCallComplete
	var child string
	for _, e := range evs {
		switch e := e.(type) {
		case event.ToolCallComplete:
			if e.ToolName == "rm" {
				denied = e
			}
		case event.SpawnSessionStart:
			child = e.ChildSessionID
		}
	}
	if !denied.IsError || !strings.Contains(denied.ToolResult, "denied: not here") {
		t.Errorf("rm's completion = %+v", denied)
	}
	mu.Lock()
	want := "session-start:startup,pre:rm,pre:ask_worker,subagent-start:worker,subagent-end:worker:completed,session-end:completed"
	if g := strings.Join(got, ","); g != want {
		t.Errorf("hooks ran: %s\nwant        %s", g, want)
	}
	mu.Unlock()
	msgs, err := st.Messages(context.Background(), child)
	if err != nil {
		t.Fatal(err)
	}
	injected, prompted := false, false
	for _, m := range msgs {
		prompted = prompted || m.Role == model.RoleUser && m.Text() == "hi"
		if m.Role == model.RoleUser && m.Synthetic && m.Text() == "a word from the start hook" {
			injected = true
		}
	}
	if !prompted {
		t.Errorf("the child's conversation has no prompt (an allowed call's arguments changed): %+v", msgs)
	}
	if !injected {
		t.Errorf("the child's conversation has no injection of its start hook: %+v", msgs)
	}
}
