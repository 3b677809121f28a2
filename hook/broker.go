package hook

import (
	"context"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/spawn"
)

// UseBroker makes b the approver of r: a listener on the approval/request
// seam asks b (approval.Broker.Ask) and waits for a front end's answer, a
// rule made by an earlier "always" answer, b's timeout, or, when no front
// end is attached, b's unattended default (a rejection whose reason names
// the rule that asked). The request names the session the tool runs in (a
// child's own session). The returned function removes the listener.
//
// Both "always" answers are also b's rules (for the agent and tool, for
// b's life); allow always is reported as AllowedAlways, reject always as
// Rejected.
//
// When a front end is attached, the request is stored in its session's
// log before it is asked (approval_requested, flushed), and its answer
// after (approval_replied); a request that a run stored before its
// process died (ApprovalRequest.RequestID) is asked with its stored id,
// and only its answer is stored.
func (r *Registry) UseBroker(b *approval.Broker) (remove func()) {
	return r.OnApproval.Use(func(ctx context.Context, req ApprovalRequest, _ Next[ApprovalRequest, ApprovalDecision]) ApprovalDecision {
		areq := approval.Request{
			SessionID: req.SessionID, Agent: req.Agent, Tool: req.ToolName, CallID: req.CallID,
			Input: req.Input, Rule: req.Reason,
		}
		var log event.Sink
		if req.RequestID != "" {
			// Stored by the run that stopped: asked again with its id,
			// its answer stored as a live one is.
			areq.ID = req.RequestID
			if inv := runOf(ctx, req.SessionID); inv != nil {
				log = inv.Sink
			}
		} else {
			log = stored(ctx, b, &areq)
		}
		a, err := b.Ask(ctx, areq)
		if log != nil {
			log.Emit(approval.RepliedEvent(areq.ID, a))
		}
		reason := a.Message
		switch {
		case err != nil && ctx.Err() != nil:
			return ApprovalDecision{Outcome: Cancelled, Reason: reason}
		case err != nil:
			return ApprovalDecision{Outcome: Unavailable, Reason: err.Error()}
		case a.Reply == approval.AllowAlways:
			return ApprovalDecision{Outcome: AllowedAlways, Reason: reason}
		case a.Reply.Allows():
			return ApprovalDecision{Outcome: AllowedOnce, Reason: reason}
		case a.By == approval.ByUnattended:
			return ApprovalDecision{Outcome: Unavailable, Reason: reason}
		}
		if reason == "" {
			reason = "rejected by the user"
			if a.By != "" && a.By != approval.ByRule {
				reason += " in " + a.By
			}
		} else if a.By != approval.ByRule && a.By != approval.ByTimeout {
			reason = "rejected by the user in " + a.By + ": " + reason
		}
		return ApprovalDecision{Outcome: Rejected, Reason: reason}
	}, WithName("approval-broker"))
}

// stored stores a request that a front end will be asked (b has one
// attached) in the log of the session it belongs to, as an
// approval_requested event, so that a process reading the store sees it
// (docs/approvals.md, Durable); it gives req its id first, and returns the
// sink where its answer is to be stored (nil: not stored, the ctx carries
// no run of that session, or nobody is attached).
//
// The request is durable before anyone is shown it (the store is
// flushed): a request a person saw survives the process, whose end a
// later process can then go on from (pool.Pool.Continue).
func stored(ctx context.Context, b *approval.Broker, req *approval.Request) event.Sink {
	inv := runOf(ctx, req.SessionID)
	if inv == nil || !b.Attached() {
		return nil
	}
	req.ID, req.Created = id.Ascending(approval.IDPrefix), time.Now()
	req.Title = approval.Title(req.Tool, req.Input)
	inv.Sink.Emit(approval.RequestedEvent(*req))
	// The run's consumers (the streams front ends read) have had the
	// request and every event before it before the broker shows it.
	inv.Sync()
	if inv.Runtime != nil && inv.Runtime.Store() != nil {
		if err := inv.Runtime.Store().Flush(ctx); err != nil {
			inv.Runtime.Logger().Warn("the approval request may not outlive this process: the store did not flush", "request", req.ID, "err", err)
		}
	}
	return inv.Sink
}

// runOf is the invocation of session sid's run that ctx carries, when it
// has a sink (nil when ctx carries none of that session).
func runOf(ctx context.Context, sid string) *spawn.Invocation {
	inv := spawn.InvocationFrom(ctx)
	if inv == nil || inv.Sink == nil || inv.Session.ID != sid {
		return nil
	}
	return inv
}
