package acpagent

import (
	"context"
	"fmt"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/spawn"
)

// approver is the approval/request point of the pool's hooks
// (hook.Registry.RequestApproval): the approval flow of docs/approvals.md.
type approver interface {
	RequestApproval(ctx context.Context, req hook.ApprovalRequest) hook.ApprovalDecision
}

// permission answers the agent's session/request_permission: granted at
// once under requires_tool_confirmation: never; else asked through the
// approval flow, labelled with the member and the child session, and
// refused when the pool has no approval flow (no hooks) or nobody can
// answer. The run's cancellation withdraws the question.
func (t *turn) permission(ctx context.Context, req acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	opts := req.Options
	if t.n.cfg.Confirm == ConfirmNever {
		if id, ok := option(opts, acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways); ok {
			t.grant(req.ToolCall)
			return selected(id)
		}
	}
	ctx, cancel := context.WithCancel(spawn.WithInvocation(ctx, t.inv))
	defer cancel()
	defer context.AfterFunc(t.ctx, cancel)()
	ap, _ := t.inv.Runtime.Lifecycle().(approver)
	if ap == nil {
		t.n.cfg.Logger.Warn("acpagent: a permission request is refused: the pool has no hooks, so no approval flow", "agent", t.n.cfg.Name)
		return reject(opts)
	}
	tc := req.ToolCall
	name := "other"
	if tc.Kind != nil && *tc.Kind != "" {
		name = string(*tc.Kind)
	}
	title := name
	if tc.Title != nil && *tc.Title != "" {
		title = *tc.Title
	}
	d := ap.RequestApproval(ctx, hook.ApprovalRequest{
		Agent: t.n.cfg.Name, SessionID: t.inv.Session.ID, ToolName: name, CallID: string(tc.ToolCallId),
		Input:  rawJSON(tc.RawInput),
		Reason: fmt.Sprintf("the external agent %s asks permission: %s", t.n.cfg.Name, title),
	})
	switch d.Outcome {
	case hook.AllowedAlways:
		if id, ok := option(opts, acp.PermissionOptionKindAllowAlways, acp.PermissionOptionKindAllowOnce); ok {
			t.grant(tc)
			return selected(id)
		}
	case hook.AllowedOnce:
		if id, ok := option(opts, acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways); ok {
			t.grant(tc)
			return selected(id)
		}
	case hook.Cancelled:
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
	}
	return reject(opts)
}

// option is the id of the first option of the first kind that opts has.
func option(opts []acp.PermissionOption, kinds ...acp.PermissionOptionKind) (acp.PermissionOptionId, bool) {
	for _, k := range kinds {
		for _, o := range opts {
			if o.Kind == k {
				return o.OptionId, true
			}
		}
	}
	return "", false
}

func selected(id acp.PermissionOptionId) acp.RequestPermissionResponse {
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(id)}
}

// reject picks the agent's reject option (once before always: a refusal
// here is this call's), or cancels when it offers none.
func reject(opts []acp.PermissionOption) acp.RequestPermissionResponse {
	if id, ok := option(opts, acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways); ok {
		return selected(id)
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
}
