package durablewire

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/spawn"
)

// SpawnBudget is implemented by an Env whose sessions are runs of their
// own (a durable engine's child workflows, on any worker) and that keeps
// the budget (max_spawns) of the run that spawned them where all of them
// reach it, so that children running at the same time count against one
// budget as they do in one process. spawn.Spawn and spawn.Reserve take
// spawns through it, a reservation's release gives them back; an Env
// without it counts in the invocation's run state.
type SpawnBudget interface {
	// TakeSpawns takes n spawns of the budget of inv's run (limit of
	// them), all or none; left is what was left before (0 when none). An
	// error is the budget's that could not be reached: nothing was taken.
	TakeSpawns(ctx context.Context, inv *spawn.Invocation, n, limit int) (left int, ok bool, err error)
	// ReturnSpawns gives n spawns taken by TakeSpawns back.
	ReturnSpawns(ctx context.Context, inv *spawn.Invocation, n int)
}

// HookEnv is implemented by an Env whose run must not do I/O (a workflow):
// the agent's hooks, which may run commands, are then called through it,
// where I/O may be done (on a worker, with CallHook), and their answers
// come back to the run. An Env without it has the hooks called in the
// run. Points whose Hooks say they are quiet (agent.QuietHooks) are called
// in the run all the same: they do no I/O.
type HookEnv interface {
	// RunHook calls point (agent.Hook*) of the Hooks of the named agent
	// with payload in, for inv's session, and decodes the answer into
	// out. An error leaves out as it was: the caller's default.
	RunHook(ctx context.Context, inv *spawn.Invocation, agent, point string, in, out any) error
}

// ToolsetEnv is implemented by an Env whose run must not do I/O: the
// agent's toolsets (MCP servers) are listed through it, where they run (on
// a worker, with agent.Agent.ListToolsets), and their calls go through
// spawn.Env.Tool, whose side finds them with agent.Agent.ToolsetTool. An
// Env without it gets a toolset_error for each toolset.
type ToolsetEnv interface {
	// ListToolsets returns what each of the agent's toolsets gave, in
	// order; an error is every toolset's.
	ListToolsets(ctx context.Context, inv *spawn.Invocation, agent string) ([]agent.ToolsetList, error)
}

// CallHook calls point of h with the JSON payload in (what a HookEnv's
// RunHook was given) and returns the answer: the worker side of a hook
// call, where I/O may be done. An unknown point or a payload that does not
// decode is an error.
func CallHook(ctx context.Context, h agent.Hooks, point string, in []byte) (any, error) {
	switch point {
	case agent.HookPromptSubmit:
		var p agent.PromptInfo
		if err := decode(point, in, &p); err != nil {
			return nil, err
		}
		return h.PromptSubmit(ctx, p), nil
	case agent.HookModelRequest:
		var p agent.RequestInfo
		if err := decode(point, in, &p); err != nil {
			return nil, err
		}
		return h.ModelRequest(ctx, p.Agent, p.SessionID, &p.Request), nil
	case agent.HookPreTool:
		var p agent.ToolInfo
		if err := decode(point, in, &p); err != nil {
			return nil, err
		}
		return h.PreTool(ctx, p), nil
	case agent.HookPostTool:
		var p agent.PostToolInfo
		if err := decode(point, in, &p); err != nil {
			return nil, err
		}
		return h.PostTool(ctx, p.Tool, p.Result), nil
	case agent.HookTurnStop:
		var p agent.TurnStopInfo
		if err := decode(point, in, &p); err != nil {
			return nil, err
		}
		return h.TurnStop(ctx, p), nil
	}
	return nil, fmt.Errorf("unknown hook point %q", point)
}

func decode(point string, in []byte, v any) error {
	if err := json.Unmarshal(in, v); err != nil {
		return fmt.Errorf("hook point %s: decode the payload: %w", point, err)
	}
	return nil
}

// ApprovalEnv is implemented by an Env that waits for a person's answer
// itself, durably (a workflow waits for a signal, across restarts of the
// process that shows the request). The agent's tools/pre-execute is then
// called with DeferApprovals: an "ask" that no approval/request listener
// settled comes back to the run as agent.ToolAsk (hook.Registry.PreTool),
// and the run asks the Env, whose answer allows or denies the call. An
// Env without it never sees an ask: the hooks settle it where they run.
type ApprovalEnv interface {
	// AskApproval waits for the answer to the tool call t, asked by d
	// (Action ToolAsk, its Reason the rule that asked, its UpdatedInput
	// the input to run), and returns ToolAllow or ToolDeny with the
	// reason the model sees.
	AskApproval(ctx context.Context, inv *spawn.Invocation, t agent.ToolInfo, d agent.ToolDecision) agent.ToolDecision
}

// deferKey marks the context of the hooks an engine calls for a run that
// waits for its approvals itself. It is a context mark, not a field of
// agent.ToolInfo, because it is a contract between the engine and
// hook.Registry alone, made inside the engine (its workflow and its Hook
// activity): a field would put engine plumbing in the payload every
// tools/pre-execute listener and command hook sees, and a program that
// embeds the pool would have a flag to set wrong.
type deferKey struct{}

// DeferApprovals marks ctx: the approvals asked under it are waited for
// by the run's ApprovalEnv, not by the approval/request listeners.
func DeferApprovals(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferKey{}, true)
}

// ApprovalsDeferred reports whether ctx was marked by DeferApprovals.
func ApprovalsDeferred(ctx context.Context) bool {
	v, _ := ctx.Value(deferKey{}).(bool)
	return v
}
