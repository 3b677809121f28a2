package agent

import (
	"context"
	"encoding/json"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// Hooks are the interception seams of the run loop (docs/spec/HOOKS.md §2). The
// hook package implements them; every payload handed to a hook is a copy.
type Hooks interface {
	// PromptSubmit may block the prompt or add context.
	PromptSubmit(ctx context.Context, p PromptInfo) PromptDecision
	// ModelRequest may change the request about to be sent.
	ModelRequest(ctx context.Context, agent, sessionID string, req *model.Request) *model.Request
	// PreTool may deny a tool call (including after asking for approval).
	PreTool(ctx context.Context, t ToolInfo) ToolDecision
	// PostTool sees the result and may replace it (feedback for the model).
	PostTool(ctx context.Context, t ToolInfo, res tool.Result) tool.Result
	// TurnStop may make the agent continue with a reason.
	TurnStop(ctx context.Context, s TurnStopInfo) StopDecision
}

// PromptInfo is the payload of agent/prompt-submit.
type PromptInfo struct {
	Agent     string
	SessionID string
	Content   string
}

// PromptDecision answers agent/prompt-submit.
type PromptDecision struct {
	Block   bool
	Reason  string
	Context string // extra context for the model
}

// ToolInfo is the payload of tools/pre-execute and tools/post-execute.
type ToolInfo struct {
	Agent     string
	SessionID string
	ToolName  string
	CallID    string
	Input     json.RawMessage // a frozen copy: changing it changes nothing that runs
	// Granted, when not empty, says who already approved this very call
	// and how (an external agent's own permission request that showed
	// the same edit and was allowed): an ask of tools/pre-execute is
	// answered by it instead of asking again, unless a hook changed the
	// input. Hooks still see the call and may deny it.
	Granted string
}

// The actions of a ToolDecision.
const (
	ToolAllow = "allow"
	ToolDeny  = "deny"
	ToolAsk   = "ask" // ask for approval first (hook.Registry: approval/request)
)

// ToolDecision answers tools/pre-execute. It is one type for both sides of
// the point: what a hook.Registry listener answers (allow, deny, or ask,
// which the registry turns into allow or deny by asking for approval) and
// what Hooks.PreTool gives the run. The empty Action allows, so that a
// listener's zero answer changes nothing.
//
// The run executes the call only when Allows: an ask that reaches the run
// unanswered and an unknown action deny it (fail closed).
type ToolDecision struct {
	Action string `json:"action,omitempty"` // ToolAllow, ToolDeny or ToolAsk
	Reason string `json:"reason,omitempty"` // why it was denied or asked
	// UpdatedInput, when set (and valid JSON), replaces the call's
	// arguments (allow and ask): the tool runs with it and
	// tools/post-execute sees it.
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
}

// Allows reports whether the call runs: Action is ToolAllow or empty.
func (d ToolDecision) Allows() bool { return d.Action == "" || d.Action == ToolAllow }

// TurnStopInfo is the payload of agent/turn-stop.
type TurnStopInfo struct {
	Agent        string
	SessionID    string
	FinalMessage string
}

// StopDecision answers agent/turn-stop.
type StopDecision struct {
	Continue bool
	Reason   string
}

// hookEnv is implemented by a spawn.Env whose run must not do I/O (a
// durable engine's workflow): the agent's hooks, which may run commands,
// are then called through it, where I/O may be done (on Temporal, an
// activity on a worker calls the agent's own Hooks with
// internal/durablewire.CallHook), and their answers come back to the run.
// An Env that does not implement it has the hooks called in the run, as in
// this process. Only the durable engine implements it: its contract is
// internal/durablewire.HookEnv, which has this method set.
type hookEnv interface {
	RunHook(ctx context.Context, inv *spawn.Invocation, agent, point string, in, out any) error
}

// The points of Hooks, as a durable engine's hook calls name them
// (internal/durablewire.HookEnv, CallHook).
const (
	HookPromptSubmit = "agent/prompt-submit"
	HookModelRequest = "agent/request"
	HookPreTool      = "tools/pre-execute"
	HookPostTool     = "tools/post-execute"
	HookTurnStop     = "agent/turn-stop"
)

// RequestInfo is the payload of HookModelRequest.
type RequestInfo struct {
	Agent     string        `json:"agent"`
	SessionID string        `json:"session_id"`
	Request   model.Request `json:"request"`
}

// PostToolInfo is the payload of HookPostTool.
type PostToolInfo struct {
	Tool   ToolInfo    `json:"tool"`
	Result tool.Result `json:"result"`
}

// QuietHooks is implemented by Hooks that can tell a point with nothing
// to run (no listener; hook.Registry): under a hookEnv such a point is
// called in the run itself, where it does no I/O, rather than through the
// Env (an activity per model request and tool call saved).
type QuietHooks interface {
	Quiet(point string) bool
}

// envHooks are the Hooks of a run under a hookEnv: each call goes through
// it; a call that fails gives the point's default (a tool call is denied:
// approval fails closed).
type envHooks struct {
	env   hookEnv
	inv   *spawn.Invocation
	agent string
	local Hooks // the agent's own, for the quiet points
}

// quiet reports whether point runs in the run (see QuietHooks).
func (h envHooks) quiet(point string) bool {
	q, ok := h.local.(QuietHooks)
	return ok && q.Quiet(point)
}

func (h envHooks) PromptSubmit(ctx context.Context, p PromptInfo) PromptDecision {
	if h.quiet(HookPromptSubmit) {
		return h.local.PromptSubmit(ctx, p)
	}
	var d PromptDecision
	_ = h.env.RunHook(ctx, h.inv, h.agent, HookPromptSubmit, p, &d)
	return d
}

func (h envHooks) ModelRequest(ctx context.Context, agent, sessionID string, req *model.Request) *model.Request {
	if h.quiet(HookModelRequest) {
		return h.local.ModelRequest(ctx, agent, sessionID, req)
	}
	var out model.Request
	if err := h.env.RunHook(ctx, h.inv, h.agent, HookModelRequest, RequestInfo{Agent: agent, SessionID: sessionID, Request: *req}, &out); err != nil {
		return req
	}
	return &out
}

func (h envHooks) PreTool(ctx context.Context, t ToolInfo) ToolDecision {
	if h.quiet(HookPreTool) {
		return h.approve(ctx, t, h.local.PreTool(ctx, t))
	}
	var w toolDecisionWire
	if err := h.env.RunHook(ctx, h.inv, h.agent, HookPreTool, t, &w); err != nil {
		return ToolDecision{Action: ToolDeny, Reason: "the tools/pre-execute hooks could not run: " + err.Error()}
	}
	return h.approve(ctx, t, w.decision())
}

// approvalEnv is implemented by a hookEnv that waits for approvals itself
// (internal/durablewire.ApprovalEnv, which has this method set): an ask
// the hooks gave back is asked there.
type approvalEnv interface {
	AskApproval(ctx context.Context, inv *spawn.Invocation, t ToolInfo, d ToolDecision) ToolDecision
}

// approve asks the Env for the answer to an ask the hooks gave back;
// without one the ask stays, and the run denies it (fail closed).
func (h envHooks) approve(ctx context.Context, t ToolInfo, d ToolDecision) ToolDecision {
	ae, ok := h.env.(approvalEnv)
	if d.Action != ToolAsk || !ok {
		return d
	}
	return ae.AskApproval(ctx, h.inv, t, d)
}

// toolDecisionWire decodes a ToolDecision that came back through a
// hookEnv, including the form it had before it had an Action (an Allow
// flag and an Input; a durable engine may replay answers recorded then):
// without the flag an old denial would decode as an empty Action, which
// allows.
type toolDecisionWire struct {
	ToolDecision
	Allow *bool           `json:"Allow"`
	Input json.RawMessage `json:"Input"`
}

func (w toolDecisionWire) decision() ToolDecision {
	d := w.ToolDecision
	if w.Allow != nil && d.Action == "" {
		d.Action = ToolDeny
		if *w.Allow {
			d.Action = ToolAllow
		}
		if d.UpdatedInput == nil {
			d.UpdatedInput = w.Input
		}
	}
	if string(d.UpdatedInput) == "null" {
		d.UpdatedInput = nil // no new input (JSON's null), not the input null
	}
	return d
}

func (h envHooks) PostTool(ctx context.Context, t ToolInfo, res tool.Result) tool.Result {
	if h.quiet(HookPostTool) {
		return h.local.PostTool(ctx, t, res)
	}
	out := res
	if err := h.env.RunHook(ctx, h.inv, h.agent, HookPostTool, PostToolInfo{Tool: t, Result: res}, &out); err != nil {
		return res
	}
	return out
}

func (h envHooks) TurnStop(ctx context.Context, s TurnStopInfo) StopDecision {
	if h.quiet(HookTurnStop) {
		return h.local.TurnStop(ctx, s)
	}
	var d StopDecision
	_ = h.env.RunHook(ctx, h.inv, h.agent, HookTurnStop, s, &d)
	return d
}
