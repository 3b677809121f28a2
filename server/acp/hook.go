package acp

import (
	"context"

	"github.com/agentpool/agentpool/hook"
)

// UseApprovals makes s the approver of reg: a listener on its
// approval/request seam asks the editor (RequestApproval). When no editor
// can answer (no client connected, or the session was not opened over this
// connection) it passes the request down the chain, whose end denies. The
// returned function removes the listener.
func (s *Server) UseApprovals(reg *hook.Registry) (remove func()) {
	return reg.OnApproval.Use(func(ctx context.Context, req hook.ApprovalRequest, next hook.Next[hook.ApprovalRequest, hook.ApprovalDecision]) hook.ApprovalDecision {
		d := s.RequestApproval(ctx, ApprovalRequest{
			SessionID: req.SessionID, Agent: req.Agent, ToolName: req.ToolName, CallID: req.CallID,
			Input: req.Input, Reason: req.Reason,
		})
		switch d {
		case ApprovalUnavailable:
			return next(ctx, req)
		case ApprovalAllowedOnce, ApprovalAllowedAlways:
			return hook.ApprovalDecision{Outcome: string(d), Reason: "approved in the editor"}
		case ApprovalRejected:
			return hook.ApprovalDecision{Outcome: hook.Rejected, Reason: "rejected in the editor"}
		default:
			return hook.ApprovalDecision{Outcome: hook.Cancelled, Reason: "the editor cancelled the request"}
		}
	}, hook.WithName("acp"))
}
