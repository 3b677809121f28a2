package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/spawn"
)

// Approvals under the engine. A tool call whose rule is "ask" is not
// asked on the worker (no front end is attached there): the ask comes back
// to the workflow, which stores the request in the session's log (an
// approval_requested event, written at once), waits for the
// SignalApproval that answers it (the submitter's Approver sends it when
// a front end answered), or for the timeout (a workflow timer), stores
// the answer (approval_replied) and allows or denies the call. The wait is
// part of the workflow's state: it outlives the process that shows the
// request, and the workers.

// SignalApproval is the name of the signal that answers a request of a
// session's workflow (its id is the session's id): an ApprovalSignal.
const SignalApproval = "approval"

// Approvals is how a run's workflows wait for answers.
type Approvals struct {
	// Timeout bounds the wait (a workflow timer); none when 0.
	Timeout time.Duration `json:"timeout,omitempty"`
	// TimeoutReply answers a request at its timeout (RejectOnce when
	// empty).
	TimeoutReply approval.Reply `json:"timeout_reply,omitempty"`
}

// ApprovalSignal answers the request RequestID.
type ApprovalSignal struct {
	RequestID string         `json:"request_id"`
	Reply     approval.Reply `json:"reply"`
	Message   string         `json:"message,omitempty"`
	By        string         `json:"by,omitempty"` // the front end that answered
}

// approvalWaits are a workflow's requests waiting for their signal.
type approvalWaits struct {
	waiting map[string]bool // request id -> waiting
	answers map[string]ApprovalSignal
	always  map[string]bool // agent/tool allowed always, for the session
}

// receive starts, once, the coroutine that takes the signals and keeps
// the answers of the requests that wait (an answer to anything else:
// answered already, timed out, never asked, is dropped).
func (e *wfEnv) receive() *approvalWaits {
	if e.waiting != nil {
		return e.waiting
	}
	w := &approvalWaits{waiting: map[string]bool{}, answers: map[string]ApprovalSignal{}, always: map[string]bool{}}
	e.waiting = w
	ch := workflow.GetSignalChannel(e.root, SignalApproval)
	workflow.Go(e.root, func(c workflow.Context) {
		for {
			var s ApprovalSignal
			if !ch.Receive(c, &s) {
				return
			}
			if w.waiting[s.RequestID] && s.Reply != "" {
				w.answers[s.RequestID] = s
			} else {
				workflow.GetLogger(c).Warn("approval signal for no waiting request dropped", "request", s.RequestID, "reply", s.Reply)
			}
		}
	})
	return w
}

// AskApproval implements durablewire.ApprovalEnv.
func (e *wfEnv) AskApproval(ctx context.Context, inv *spawn.Invocation, t agent.ToolInfo, d agent.ToolDecision) agent.ToolDecision {
	if e.approvals == nil {
		return agent.ToolDecision{Action: agent.ToolDeny, Reason: "approval unavailable: this run has no front end that can answer"}
	}
	w := e.receive()
	key := t.Agent + "\x00" + t.ToolName
	if w.always[key] {
		return agent.ToolDecision{Action: agent.ToolAllow, UpdatedInput: d.UpdatedInput}
	}
	wc := e.wctx(ctx)
	input := t.Input
	if len(d.UpdatedInput) > 0 {
		input = d.UpdatedInput
	}
	req := approval.Request{
		ID: e.NewID(ctx, approval.IDPrefix), SessionID: t.SessionID, Agent: t.Agent, Tool: t.ToolName, CallID: t.CallID,
		Input: json.RawMessage(input), Title: approval.Title(t.ToolName, input), Rule: d.Reason, Created: workflow.Now(wc),
	}
	w.waiting[req.ID] = true
	defer delete(w.waiting, req.ID)
	// Stored before the wait: the submitter shows what the log has.
	inv.Sink.Emit(approval.RequestedEvent(req))
	var werr error
	e.locked(wc, func() { werr = e.write(wc) })
	if werr != nil {
		return agent.ToolDecision{Action: agent.ToolDeny, Reason: "approval unavailable: the request could not be stored: " + werr.Error()}
	}

	ans := e.wait(wc, w, req.ID)
	delete(w.answers, req.ID)
	inv.Sink.Emit(approval.RepliedEvent(req.ID, ans))
	e.locked(wc, func() { _ = e.write(wc) }) // else with the next step
	if ans.Reply.Allows() {
		if ans.Reply == approval.AllowAlways {
			w.always[key] = true
		}
		return agent.ToolDecision{Action: agent.ToolAllow, UpdatedInput: d.UpdatedInput}
	}
	return agent.ToolDecision{Action: agent.ToolDeny, Reason: rejection(ans)}
}

// wait waits for the answer to id: its signal, the timeout, or the end of
// the run (a cancellation rejects).
func (e *wfEnv) wait(wc workflow.Context, w *approvalWaits, id string) approval.Answer {
	answered := func() bool { _, ok := w.answers[id]; return ok }
	var err error
	timedOut := false
	if t := e.approvals.Timeout; t > 0 {
		var ok bool
		ok, err = workflow.AwaitWithTimeout(wc, t, answered)
		timedOut = err == nil && !ok
	} else {
		err = workflow.Await(wc, answered)
	}
	switch {
	case answered():
		s := w.answers[id]
		by := s.By
		if by == "" {
			by = "front end"
		}
		return approval.Answer{Reply: s.Reply, Message: s.Message, By: by}
	case timedOut:
		reply := e.approvals.TimeoutReply
		if reply == "" {
			reply = approval.RejectOnce
		}
		return approval.Answer{Reply: reply, By: approval.ByTimeout, Message: fmt.Sprintf("nobody answered within %v", e.approvals.Timeout)}
	}
	if err != nil {
		e.cancel(context.Canceled)
	}
	return approval.Answer{Reply: approval.RejectOnce, By: approval.ByCancelled, Message: "the run was cancelled"}
}

// rejection is what the model is told of a rejection, in the words of
// the in-process approver (hook.Registry.UseBroker).
func rejection(a approval.Answer) string {
	outcome := "rejected"
	switch a.By {
	case approval.ByCancelled:
		outcome = "cancelled"
	case approval.ByUnattended:
		outcome = "unavailable"
	}
	reason := a.Message
	switch {
	case reason == "" && a.By != approval.ByRule && a.By != approval.ByTimeout:
		reason = "rejected by the user in " + a.By
	case a.By != approval.ByRule && a.By != approval.ByTimeout && a.By != approval.ByCancelled && a.By != approval.ByUnattended:
		reason = "rejected by the user in " + a.By + ": " + reason
	}
	return "approval " + outcome + ": " + reason
}
