package acp

import (
	"context"
	"encoding/json"
	"errors"
)

// ApprovalRequest is the payload of the approval/request seam
// (spec/HOOKS.md §2): a tool call that the policy says needs the user's
// approval.
type ApprovalRequest struct {
	// SessionID is the session that runs the tool: an ACP session or any of
	// its descendants while its prompt runs.
	SessionID string
	Agent     string
	ToolName  string
	CallID    string
	Title     string // shown to the user; the tool name when empty
	Kind      string // ACP tool kind; "other" when empty
	Input     json.RawMessage
	Reason    string // why approval is needed
}

// ApprovalDecision answers an approval request (spec/HOOKS.md §2).
type ApprovalDecision string

// Decisions. Anything but AllowedOnce and AllowedAlways denies (fail
// closed).
const (
	ApprovalAllowedOnce   ApprovalDecision = "allowed_once"
	ApprovalAllowedAlways ApprovalDecision = "allowed_always"
	ApprovalRejected      ApprovalDecision = "rejected"
	ApprovalCancelled     ApprovalDecision = "cancelled"
	ApprovalUnavailable   ApprovalDecision = "unavailable"
)

// Allowed reports whether the tool may run.
func (d ApprovalDecision) Allowed() bool {
	return d == ApprovalAllowedOnce || d == ApprovalAllowedAlways
}

// Approver asks for the approval of a tool call. *Server implements it: a
// listener on the hooks' approval/request seam calls it.
type Approver interface {
	RequestApproval(ctx context.Context, req ApprovalRequest) ApprovalDecision
}

var _ Approver = (*Server)(nil)

// Permission option ids (they equal their kinds).
const (
	optionAllowOnce    = "allow_once"
	optionAllowAlways  = "allow_always"
	optionRejectOnce   = "reject_once"
	optionRejectAlways = "reject_always"
)

type permissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

type permissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  toolCallUpdate     `json:"toolCall"`
	Options   []permissionOption `json:"options"`
}

type permissionResponse struct {
	Outcome struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId"`
	} `json:"outcome"`
}

// RequestApproval asks the editor with session/request_permission, on the
// ACP session that req.SessionID belongs to. An "always" answer is
// remembered for that tool for the rest of the ACP session and answers
// later requests without asking. It returns ApprovalUnavailable when no
// client is connected or the session is not one of its sessions, and
// ApprovalCancelled when ctx ends (the prompt was cancelled) or the client
// answers cancelled.
func (s *Server) RequestApproval(ctx context.Context, req ApprovalRequest) ApprovalDecision {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return ApprovalUnavailable
	}
	return c.requestApproval(ctx, req)
}

func (c *conn) requestApproval(ctx context.Context, req ApprovalRequest) ApprovalDecision {
	c.mu.Lock()
	sess := c.owners[req.SessionID]
	c.mu.Unlock()
	if sess == nil {
		c.log.Warn("acp: approval for a session not on this connection", "session", req.SessionID, "tool", req.ToolName)
		return ApprovalUnavailable
	}
	sess.mu.Lock()
	if d, ok := sess.always[req.ToolName]; ok {
		sess.mu.Unlock()
		return d
	}
	sess.mu.Unlock()

	title := req.Title
	if title == "" {
		title = req.ToolName
	}
	params := permissionRequest{
		SessionID: sess.id,
		ToolCall: toolCallUpdate{
			ToolCallID: req.CallID, Title: title, Kind: toolKind(req.Kind), Status: statusPending,
			RawInput: rawJSON(req.Input),
			Meta: map[string]any{"agentpool": map[string]any{
				"session_id": req.SessionID, "agent": req.Agent, "tool_name": req.ToolName, "reason": req.Reason,
			}},
		},
		Options: []permissionOption{
			{optionAllowOnce, "Allow once", "allow_once"},
			{optionAllowAlways, "Always allow " + req.ToolName, "allow_always"},
			{optionRejectOnce, "Reject", "reject_once"},
			{optionRejectAlways, "Always reject " + req.ToolName, "reject_always"},
		},
	}
	var resp permissionResponse
	if err := c.calls.call(ctx, sess.id, methodRequestPermission, params, &resp); err != nil {
		if ctx.Err() != nil {
			return ApprovalCancelled
		}
		var rerr *rpcError
		if errors.As(err, &rerr) {
			c.log.Warn("acp: request_permission failed", "code", rerr.Code, "err", rerr.Message)
		} else {
			c.log.Warn("acp: request_permission failed", "err", err)
		}
		return ApprovalUnavailable
	}
	remember := func(d ApprovalDecision) ApprovalDecision {
		sess.mu.Lock()
		if sess.always == nil {
			sess.always = map[string]ApprovalDecision{}
		}
		sess.always[req.ToolName] = d
		sess.mu.Unlock()
		return d
	}
	switch resp.Outcome.Outcome {
	case "cancelled":
		return ApprovalCancelled
	case "selected":
		switch resp.Outcome.OptionID {
		case optionAllowOnce:
			return ApprovalAllowedOnce
		case optionAllowAlways:
			return remember(ApprovalAllowedAlways)
		case optionRejectOnce:
			return ApprovalRejected
		case optionRejectAlways:
			return remember(ApprovalRejected)
		}
	}
	c.log.Warn("acp: unexpected request_permission outcome", "outcome", resp.Outcome.Outcome, "option", resp.Outcome.OptionID)
	return ApprovalUnavailable
}
