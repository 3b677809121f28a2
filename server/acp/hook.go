package acp

import (
	"context"

	"github.com/agentpool/agentpool/hook"
)

// UseHooks makes s the approver of reg (UseApprovals) and keeps the root
// sessions of reg's hooks in step with ACP sessions: the runs of a
// session's prompts are one session for them (pool.RunRequest.KeepSession), so that
// session/start fires at its first prompt and session/end when the session
// is closed (session/close) or the connection ends (hook.CauseClosed,
// hook.CauseDisconnected), not around every prompt. The returned function
// removes the approval listener.
func (s *Server) UseHooks(reg *hook.Registry) (remove func()) {
	s.hooks.Store(reg)
	return s.UseApprovals(reg)
}

// keepsSessions reports whether the runs of a session's prompts are one
// session for the hooks (UseHooks).
func (s *Server) keepsSessions() bool { return s.hooks.Load() != nil }

// endSession tells the hooks (UseHooks) that an ACP session ended.
func (s *Server) endSession(sessionID, cause string) {
	if reg := s.hooks.Load(); reg != nil {
		reg.EndSession(context.Background(), sessionID, cause)
	}
}

// endSessions ends every session still open on the connection (its end).
func (c *conn) endSessions(cause string) {
	c.mu.Lock()
	ids := make([]string, 0, len(c.sessions))
	for id := range c.sessions {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.s.endSession(id, cause)
	}
}

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
