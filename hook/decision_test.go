package hook_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/spawn"
)

// One ToolDecision: the listeners of tools/pre-execute answer the very
// type that agent.Hooks.PreTool returns, its zero value allows, and only
// allow (or nothing) lets a call run.
func TestOneToolDecision(t *testing.T) {
	for _, p := range hook.Points() {
		if p.Name == hook.PointPreExecute && p.Decision != reflect.TypeFor[agent.ToolDecision]() {
			t.Errorf("tools/pre-execute answers %v, want agent.ToolDecision", p.Decision)
		}
	}
	for _, c := range []struct {
		action string
		allows bool
	}{{"", true}, {agent.ToolAllow, true}, {agent.ToolDeny, false}, {agent.ToolAsk, false}, {"maybe", false}} {
		if got := (agent.ToolDecision{Action: c.action}).Allows(); got != c.allows {
			t.Errorf("Action %q: Allows() = %v, want %v", c.action, got, c.allows)
		}
	}
	// The wire form names the action; an empty one is left out.
	b, err := json.Marshal(agent.ToolDecision{Action: agent.ToolDeny, Reason: "no", UpdatedInput: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"action":"deny","reason":"no","updated_input":{"n":1}}` {
		t.Errorf("JSON %s", got)
	}

	// The registry answers the run with allow or deny, never ask.
	reg := hook.New(hook.Options{})
	reg.Approvals.Set("a", map[string]string{"ask_*": "ask", "no_*": "deny"})
	info := func(name string) agent.ToolInfo {
		return agent.ToolInfo{Agent: "a", SessionID: "s", ToolName: name, CallID: "c-" + name, Input: json.RawMessage(`{}`)}
	}
	ctx := context.Background()
	if d := reg.PreTool(ctx, info("yes")); d.Action != agent.ToolAllow {
		t.Errorf("allowed tool: %+v", d)
	}
	if d := reg.PreTool(ctx, info("no_x")); d.Action != agent.ToolDeny || !strings.Contains(d.Reason, "denies no_x") {
		t.Errorf("denied tool: %+v", d)
	}
	if d := reg.PreTool(ctx, info("ask_x")); d.Action != agent.ToolDeny || !strings.Contains(d.Reason, "approval unavailable") {
		t.Errorf("ask without an approver: %+v", d)
	}
}

// An action the registry does not know denies the call, and the model is
// told which action it was.
func TestPreExecuteUnknownActionDenies(t *testing.T) {
	reg := hook.New(hook.Options{})
	reg.OnPreExecute.Use(func(ctx context.Context, c hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
		d := next(ctx, c)
		d.Action = "Allow" // not "allow": actions are exact
		return d
	})
	d := reg.PreTool(context.Background(), agent.ToolInfo{Agent: "a", SessionID: "s", ToolName: "probe", CallID: "1"})
	if d.Allows() || d.Action != agent.ToolDeny || !strings.Contains(d.Reason, `unknown action "Allow"`) {
		t.Fatalf("decision %+v", d)
	}

	h := newHarness(t, reg, spawn.Limits{})
	p := &probe{name: "probe"}
	h.agent("main", scripted(t, callTurn("probe", map[string]any{"n": 1}), text("done")), p)
	_, sid, _ := h.run(context.Background(), "main", "go")
	if len(p.ran()) != 0 {
		t.Error("a call with an unknown action ran")
	}
	rs := toolResults(h.messages(sid))
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Text, `unknown action "Allow"`) {
		t.Errorf("tool results %+v", rs)
	}
}

// A call already granted (agent.ToolInfo.Granted) is not asked about
// again: the ask of the tool_approval policy is answered by the grant.
// A hook may still deny it, and a hook that changes its input makes it
// another call, which is asked about as usual.
func TestGrantedCallIsNotAskedAgain(t *testing.T) {
	reg := hook.New(hook.Options{})
	reg.Approvals.Set("a", map[string]string{"Write": "ask"})
	asked := 0
	reg.OnApproval.Use(func(_ context.Context, _ hook.ApprovalRequest, _ hook.Next[hook.ApprovalRequest, hook.ApprovalDecision]) hook.ApprovalDecision {
		asked++
		return hook.ApprovalDecision{Outcome: hook.Rejected, Reason: "asked"}
	})
	ctx := context.Background()
	call := agent.ToolInfo{Agent: "a", SessionID: "s", ToolName: "Write", CallID: "1", Input: json.RawMessage(`{"file_path":"f"}`), Granted: "the edit a asked for, allowed"}
	if d := reg.PreTool(ctx, call); d.Action != agent.ToolAllow || asked != 0 {
		t.Errorf("granted call: %+v, asked %d times", d, asked)
	}

	call.Granted = ""
	if d := reg.PreTool(ctx, call); d.Action != agent.ToolDeny || asked != 1 {
		t.Errorf("call without a grant: %+v, asked %d times", d, asked)
	}

	call.Granted = "allowed"
	reg.OnPreExecute.Use(func(ctx context.Context, c hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
		d := next(ctx, c)
		d.UpdatedInput = json.RawMessage(`{"file_path":"elsewhere"}`)
		return d
	})
	if d := reg.PreTool(ctx, call); d.Action != agent.ToolDeny || asked != 2 {
		t.Errorf("granted call whose input a hook changed: %+v, asked %d times", d, asked)
	}

	reg.OnPreExecute.Use(func(context.Context, hook.ToolCall, hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
		return agent.ToolDecision{Action: agent.ToolDeny, Reason: "not here"}
	})
	if d := reg.PreTool(ctx, call); d.Action != agent.ToolDeny || d.Reason != "not here" {
		t.Errorf("granted call a hook denies: %+v", d)
	}
}
