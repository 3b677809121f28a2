// PermissionRequest and Notification: at approval/request, where a tool
// call waits for someone to approve it.

package command

import (
	"context"
	"sync"

	"github.com/agentpool/agentpool/hook"
)

// permissionRequest runs where Claude Code shows its permission dialog: a
// tool call needs approval (the agent's tool_approval policy or a
// PreToolUse hook asked). The PermissionRequest hooks answer first: a deny
// (decision.behavior deny, exit 2, continue: false) rejects the call with
// its message, an allow approves it once (with decision.updatedInput as its
// input). Without an answer the request goes on to the approvers (the
// editor, the terminal), and the Notification hooks are told that the run
// waits for permission (notification_type permission_prompt) while it
// waits.
func (b *Bridge) permissionRequest(ctx context.Context, req hook.ApprovalRequest, next hook.Next[hook.ApprovalRequest, hook.ApprovalDecision]) hook.ApprovalDecision {
	call := hook.ToolCall{Agent: req.Agent, SessionID: req.SessionID, ToolName: req.ToolName, CallID: req.CallID, Input: req.Input}
	if b.Has(PermissionRequest) {
		if d, ok := b.askHooks(ctx, call); ok {
			return d
		}
	}
	if !b.Has(Notification) {
		return next(ctx, req)
	}
	var wg sync.WaitGroup
	wg.Go(func() { b.notify(ctx, call) })
	d := next(ctx, req)
	wg.Wait()
	return d
}

// askHooks runs the PermissionRequest hooks; ok is false when none
// decided. A deny wins over an allow.
func (b *Bridge) askHooks(ctx context.Context, c hook.ToolCall) (hook.ApprovalDecision, bool) {
	payload, v := b.toolPayload(ctx, c)
	runs := b.fire(ctx, firing{event: PermissionRequest, targets: append([]string{v.name}, v.aliases...), payload: payload,
		tmpl: HookRun{ToolName: v.name, ToolUseID: c.CallID}})
	var denied, allowed bool
	var reasons []string
	var updated []byte
	for _, r := range runs {
		switch r.v.decision {
		case vDeny:
			denied = true
			reasons = append(reasons, r.v.reason)
		case vStop:
			denied = true
			reasons = append(reasons, r.v.stopReason)
		case vAllow:
			allowed = true
			if updated == nil && r.v.updatedInput != nil {
				updated = fromClaude(c.ToolName, r.v.updatedInput)
			}
		}
	}
	switch {
	case denied:
		reason := joinNonEmpty(reasons)
		if reason == "" {
			reason = "denied by a PermissionRequest hook"
		}
		return hook.ApprovalDecision{Outcome: hook.Rejected, Reason: reason}, true
	case allowed:
		return hook.ApprovalDecision{Outcome: hook.AllowedOnce, Reason: "allowed by a PermissionRequest hook", UpdatedInput: updated}, true
	}
	return hook.ApprovalDecision{}, false
}

// notify runs the Notification hooks of a permission prompt.
func (b *Bridge) notify(ctx context.Context, c hook.ToolCall) {
	v := presentTool(c.ToolName, nil)
	payload := b.common(ctx, c.SessionID, c.Agent)
	payload["message"] = "Claude needs your permission to use " + v.name
	payload["title"] = "Permission needed"
	payload["notification_type"] = "permission_prompt"
	b.fire(ctx, firing{event: Notification, targets: []string{"permission_prompt"}, payload: payload,
		tmpl: HookRun{ToolName: v.name, ToolUseID: c.CallID}})
}
