package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/internal/durablewire"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// Hooks under the engine. Workflow code must not run a command hook (I/O,
// and a replay would run it again): every call of a hook point is the
// Hook activity, which calls the pool's hooks on the worker, in a context
// that carries an Invocation of the session (its id, run, prompt, the
// store), as in this process; the events the hooks emit (hook_run ...)
// are written to the session's log by the activity, and what they inject
// comes back to the workflow. Agent points (durablewire.HookEnv) go through
// wfEnv.RunHook; the subagent lifecycle and the root's session/start and
// session/end are called by the workflow when the pool has them.

// The lifecycle points of the Hook activity (the agent's are agent.Hook*).
const (
	hookSubagentStart = "subagent/start"
	hookSubagentEnd   = "subagent/end"
	hookSessionStart  = "session/start"
	hookSessionEnd    = "session/end"
)

// A hook runs once: a command may not be idempotent; a failure is the
// point's default decision.
var hookOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Minute, HeartbeatTimeout: 10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1},
}

// sessionHooks are the root session points of the pool's hooks (a
// *hook.Registry, which also implements spawn.Lifecycle).
type sessionHooks interface {
	SessionStart(ctx context.Context, s session.Session, source string, kept bool)
	SessionEnd(ctx context.Context, s session.Session, reason event.StopReason, kept bool)
}

// sessionPayload is the payload of session/start and session/end.
type sessionPayload struct {
	Source     string           `json:"source,omitempty"`
	StopReason event.StopReason `json:"stop_reason,omitempty"`
}

// runtime is the runtime the hooks see in their Invocation: the pool's,
// else one over the store.
func (a *Activities) runtime() *spawn.Runtime {
	if a.Runtime != nil {
		return a.Runtime
	}
	a.rtOnce.Do(func() { a.rt = spawn.NewRuntime(spawn.Config{Store: a.Store, Lookup: a.Lookup}) })
	return a.rt
}

// Hook calls one hook point on this worker and returns what the hooks
// emitted (for the workflow's journal: the session's log is written by
// one step at a time) and injected.
func (a *Activities) Hook(ctx context.Context, in HookInput) (HookOutput, error) {
	rt := a.runtime()
	var buf bufSink
	inv := spawn.NewEnvInvocation(rt, nil, in.Session, in.RunID, in.Prompt, in.ToolCallID, nil, &buf)
	var out HookOutput
	stop := heartbeat(ctx)
	if in.DeferApprovals {
		ctx = durablewire.DeferApprovals(ctx)
	}
	ans, err := a.callHook(spawn.WithInvocation(ctx, inv), in, &out)
	stop()
	if err == nil && ans != nil {
		out.Out, err = json.Marshal(ans)
	}
	if err != nil {
		return HookOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "HookFailed", err)
	}
	out.Injected = inv.Injected()
	for _, e := range buf.evs {
		out.Events = append(out.Events, encode(e))
	}
	return out, nil
}

// callHook calls the point of in: the agent's, or the pool's lifecycle.
func (a *Activities) callHook(ctx context.Context, in HookInput, out *HookOutput) (any, error) {
	lc := a.runtime().Lifecycle()
	switch in.Point {
	case hookSubagentStart:
		var info spawn.StartInfo
		if err := json.Unmarshal(in.In, &info); err != nil || lc == nil || in.Child == nil {
			return nil, errors.Join(err, errors.New("no subagent lifecycle"))
		}
		// The child is registered here while its start fires, so that a
		// hook can inject into it (hook.Inject), as in this process.
		child, err := a.runtime().NewRoot(*in.Child, "", "", nil, event.Discard)
		if err != nil {
			return nil, err
		}
		lc.SubagentStart(ctx, info)
		out.ChildInjected = a.runtime().Release(child)
		return nil, nil
	case hookSubagentEnd:
		var info spawn.EndInfo
		if err := json.Unmarshal(in.In, &info); err != nil || lc == nil {
			return nil, errors.Join(err, errors.New("no subagent lifecycle"))
		}
		lc.SubagentEnd(detach.Context(ctx), info)
		return nil, nil
	case hookSessionStart, hookSessionEnd:
		sh, ok := lc.(sessionHooks)
		var p sessionPayload
		if err := json.Unmarshal(in.In, &p); err != nil || !ok {
			return nil, errors.Join(err, errors.New("no session hooks"))
		}
		if in.Point == hookSessionStart {
			// Registered while it fires, as the child of subagent/start.
			reg, err := a.runtime().NewRoot(in.Session, in.RunID, in.Prompt, nil, event.Discard)
			if err != nil {
				return nil, err
			}
			sh.SessionStart(ctx, in.Session, p.Source, false)
			out.ChildInjected = a.runtime().Release(reg)
		} else {
			sh.SessionEnd(detach.Context(ctx), in.Session, p.StopReason, false)
		}
		return nil, nil
	}
	ag, err := a.agent(in.Node)
	if err != nil {
		return nil, err
	}
	h := ag.Hooks()
	if h == nil {
		return nil, fmt.Errorf("agent %s has no hooks", in.Node)
	}
	return durablewire.CallHook(ctx, h, in.Point, in.In)
}

// RunHook implements durablewire.HookEnv: the Hook activity. What the hooks
// injected is injected into inv's session.
func (e *wfEnv) RunHook(ctx context.Context, inv *spawn.Invocation, node, point string, in, out any) error {
	res, err := e.hook(ctx, HookInput{Node: node, Point: point, Session: inv.Session, RunID: inv.RunID, Prompt: inv.Prompt, ToolCallID: inv.ToolCallID,
		DeferApprovals: e.approvals != nil && point == agent.HookPreTool}, in)
	if err != nil {
		return err
	}
	for _, c := range res.Injected {
		inv.Inject(c)
	}
	if out != nil && len(res.Out) > 0 {
		return json.Unmarshal(res.Out, out)
	}
	return nil
}

// hook runs the Hook activity of in with payload p, after a cancellation
// too (hooks see the end of what was cancelled, as in this process); the
// hooks' events are journaled.
func (e *wfEnv) hook(ctx context.Context, in HookInput, p any) (HookOutput, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return HookOutput{}, err
	}
	in.In = raw
	wc := e.wctx(ctx)
	if wc.Err() != nil {
		wc, _ = workflow.NewDisconnectedContext(wc)
	}
	var out HookOutput
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(wc, hookOptions), actHook, in).Get(wc, &out); err != nil {
		return HookOutput{}, err
	}
	e.j.events = append(e.j.events, out.Events...)
	return out, nil
}
