// A continued run (spawn.Continuation): the run goes on from the open tool
// calls of its last model turn, after its process died while some of them
// waited for a person's answer.

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

var _ spawn.Continuer = (*Agent)(nil)

// ApprovalResumer is implemented by Hooks that can settle an approval
// request a run stored before its process died (hook.Registry): a
// continued run asks it again, with its stored id, and runs the call
// when it is allowed. Without it a waiting call of a continued run is
// denied (approval fails closed).
type ApprovalResumer interface {
	// ResumeApproval waits for the answer to req, the stored request of
	// the call t, and answers allow (the call runs with UpdatedInput when
	// set) or deny, as PreTool answers after an ask.
	ResumeApproval(ctx context.Context, t ToolInfo, req approval.Request) ToolDecision
}

// CanContinue implements spawn.Continuer: c's conversation must end with
// a model turn whose calls include every call that waits, each waiting
// child with the node to continue it, and the run must be this
// process's (no Env).
func (a *Agent) CanContinue(c *spawn.Continuation) error {
	if c == nil || c.Waiting == nil || len(c.History) == 0 {
		return errors.New("nothing to continue")
	}
	last := c.History[len(c.History)-1]
	if last.Role != model.RoleAssistant {
		return fmt.Errorf("the conversation of agent %s does not end with a model turn", a.cfg.Name)
	}
	calls := map[string]bool{}
	for _, p := range last.ToolCalls() {
		calls[p.ToolCallID] = true
	}
	for callID := range c.Waiting.Requests {
		if !calls[callID] {
			return fmt.Errorf("the waiting call %s is not in the last model turn of agent %s", callID, a.cfg.Name)
		}
	}
	for _, w := range c.Waiting.Children {
		if !calls[w.Start.ToolCallID] {
			return fmt.Errorf("the waiting child %s was not started by a call of the last model turn of agent %s", w.Session.ID, a.cfg.Name)
		}
		if k := c.Children[w.Session.ID]; k == nil || k.Node == nil || k.Continue == nil {
			return fmt.Errorf("the waiting child %s has nothing to continue it", w.Session.ID)
		}
	}
	return nil
}

// continueTurn gives every call of the conversation's last model turn its
// result (see spawn.Continuation): the logged one, kept; the answer to its
// approval request, asked again, and the tool's result when allowed; or
// the end of its waiting child, continued. The calls that run, run at
// once, as a turn's calls do. It returns the number of the next turn.
func (r *run) continueTurn(ctx context.Context, c *spawn.Continuation) int {
	msgs := r.snapshot()
	calls := msgs[len(msgs)-1].ToolCalls()
	results := make([]model.Part, len(calls))
	var open []int
	for i, call := range calls {
		if done, ok := c.Waiting.Results[call.ToolCallID]; ok {
			results[i] = model.Part{Kind: model.PartToolResult, ToolCallID: call.ToolCallID, ToolName: call.ToolName, Text: done.ToolResult, IsError: done.IsError}
			continue
		}
		open = append(open, i)
	}
	var wg sync.WaitGroup
	for _, i := range open {
		wg.Go(func() { results[i] = r.continueCall(ctx, calls[i], c) })
	}
	wg.Wait()
	r.append(ctx, model.Message{Role: model.RoleTool, Parts: results})
	return turnIndex(r.snapshot()) + 1
}

// continueCall settles one open call of a continued turn and emits its
// tool_call_complete (its tool_call_start is in the log).
func (r *run) continueCall(ctx context.Context, c model.Part, cont *spawn.Continuation) model.Part {
	call := tool.Call{ID: c.ToolCallID, Name: c.ToolName, Args: callArgs(c), SessionID: r.inv.Session.ID}
	raw := call.Args
	var res tool.Result
	if req, ok := cont.Waiting.Requests[c.ToolCallID]; ok {
		t, found := r.tools[c.ToolName]
		if !found {
			res = tool.Errorf("unknown tool %q: the tool that waited for approval is not one of agent %s's any more", c.ToolName, r.a.cfg.Name)
		} else {
			res = r.resumeApproval(ctx, t, call, req)
		}
		return r.completeCall(c, raw, res)
	}
	if w := cont.Waiting.WaitsOn(c.ToolCallID); w != nil {
		res = spawn.ContinuedResult(spawn.ContinueChild(ctx, r.inv, cont.Children[w.Session.ID]))
		if h := r.hooks; h != nil {
			info := ToolInfo{Agent: r.a.cfg.Name, SessionID: r.inv.Session.ID, ToolName: c.ToolName, CallID: c.ToolCallID, Input: slices.Clone(raw)}
			res = h.PostTool(ctx, info, res)
		}
		return r.completeCall(c, raw, res)
	}
	// Neither kept nor waiting (the tree's CloseRest gives every other
	// call its result first): as a call whose run stopped.
	return r.completeCall(c, raw, tool.Result{Content: session.InterruptedResult, IsError: true})
}

// resumeApproval asks again for the stored request req of call and runs
// the tool when it is allowed, as execute does after an ask.
func (r *run) resumeApproval(ctx context.Context, t tool.Tool, call tool.Call, req approval.Request) tool.Result {
	if len(req.Input) > 0 && json.Valid(req.Input) {
		call.Args = slices.Clone(req.Input) // the input that was asked about
	}
	info := ToolInfo{Agent: r.a.cfg.Name, SessionID: r.inv.Session.ID, ToolName: call.Name, CallID: call.ID, Input: slices.Clone(call.Args)}
	h, ok := r.hooks.(ApprovalResumer)
	if !ok {
		return tool.Errorf("tool %s denied: approval unavailable: the run has no approver to ask again request %s", call.Name, req.ID)
	}
	d := h.ResumeApproval(ctx, info, req)
	if !d.Allows() {
		reason := d.Reason
		if d.Action != ToolDeny {
			reason = fmt.Sprintf("the approval answered %q, which is not allow or deny", d.Action)
		}
		return tool.Errorf("tool %s denied: %s", call.Name, reason)
	}
	if len(d.UpdatedInput) > 0 && json.Valid(d.UpdatedInput) {
		call.Args = slices.Clone(d.UpdatedInput)
		info.Input = slices.Clone(d.UpdatedInput)
	}
	return r.hooks.PostTool(ctx, info, r.call(ctx, t, call))
}

// turnIndex counts the model turns after the last prompt a person typed:
// the turns the run has taken.
func turnIndex(msgs []model.Message) int {
	n := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == model.RoleUser && !m.Synthetic {
			break
		}
		if m.Role == model.RoleAssistant {
			n++
		}
	}
	return n
}

// recordSpent records in the session's record what the run has spent so
// far (session.SetRunSpent), before the calls of the turn run: a call
// that waits for a person's answer may outlive the process, and the run
// that goes on with it counts these turns again. A run on an Env (which
// continues its runs itself) and a run with no hooks (nothing of it can
// wait for an answer) record nothing.
func (r *run) recordSpent() {
	st := r.inv.Runtime.Store()
	if st == nil || r.env != nil || r.hooks == nil {
		return
	}
	u, cost := r.usage, r.cost
	if err := st.UpdateSession(r.persistCtx, r.inv.Session.ID, func(s *session.Session) { session.SetRunSpent(s, u, cost) }); err != nil {
		r.inv.Runtime.Logger().Warn("store what the run spent", "session", r.inv.Session.ID, "err", err)
	}
}
