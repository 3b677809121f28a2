// Tool events: PreToolUse and PostToolUse.

package command

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentpool/agentpool/hook"
)

func rank(action string) int {
	switch action {
	case vDeny:
		return 3
	case vAsk:
		return 2
	case vAllow:
		return 1
	}
	return 0
}

func toolInput(raw json.RawMessage) any {
	if len(raw) == 0 {
		return map[string]any{}
	}
	return raw
}

func (b *Bridge) preToolUse(ctx context.Context, in hook.ToolCall, next hook.Next[hook.ToolCall, hook.ToolDecision]) hook.ToolDecision {
	payload := b.common(ctx, in.SessionID)
	payload["tool_name"] = in.ToolName
	payload["tool_input"] = toolInput(in.Input)
	payload["tool_use_id"] = in.CallID
	runs := b.fire(ctx, PreToolUse, in.ToolName, payload, HookRun{ToolName: in.ToolName, ToolUseID: in.CallID})
	// Strictest wins: deny > ask > allow.
	best, reasons := "", []string(nil)
	var updated json.RawMessage
	for _, r := range runs {
		d, reason := r.v.decision, r.v.reason
		if d == vStop {
			d, reason = vDeny, r.v.stopReason
		}
		if rank(d) == 0 {
			continue
		}
		if rank(d) > rank(best) {
			best, reasons = d, nil
		}
		if d == best && reason != "" {
			reasons = append(reasons, reason)
		}
		if updated == nil && r.v.updatedInput != nil && d != vDeny {
			updated = r.v.updatedInput
		}
	}
	if best == vDeny {
		reason := joinNonEmpty(reasons)
		if reason == "" {
			reason = "denied by a PreToolUse hook"
		}
		return hook.ToolDecision{Action: hook.Deny, Reason: reason}
	}
	if updated != nil {
		in.Input = updated
	}
	d := next(ctx, in)
	if rank(best) > rank(orAllow(d.Action)) {
		d.Action, d.Reason = best, joinNonEmpty(reasons)
	}
	if d.UpdatedInput == nil && updated != nil {
		d.UpdatedInput = updated
	}
	return d
}

func orAllow(a string) string {
	if a == "" {
		return vAllow
	}
	return a
}

// toolResponse is the result as the hooks see it: its JSON when the
// content is JSON, else the text.
func toolResponse(content string) any {
	if t := strings.TrimSpace(content); t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	return content
}

func (b *Bridge) postToolUse(ctx context.Context, in hook.ToolOutcome, next hook.Next[hook.ToolOutcome, hook.PostDecision]) hook.PostDecision {
	payload := b.common(ctx, in.SessionID)
	payload["tool_name"] = in.ToolName
	payload["tool_input"] = toolInput(in.Input)
	payload["tool_response"] = toolResponse(in.Result)
	payload["tool_use_id"] = in.CallID
	runs := b.fire(ctx, PostToolUse, in.ToolName, payload, HookRun{ToolName: in.ToolName, ToolUseID: in.CallID})
	var feedback, ctxs []string
	for _, r := range runs {
		switch r.v.decision {
		case vBlock, vDeny:
			feedback = append(feedback, r.v.reason)
		case vStop:
			feedback = append(feedback, r.v.stopReason)
		}
		ctxs = append(ctxs, r.v.context)
	}
	d := next(ctx, in)
	if len(feedback) > 0 {
		d.Block = true
		d.Feedback = joinNonEmpty(append(feedback, d.Feedback))
	}
	d.Context = joinNonEmpty(append(ctxs, d.Context))
	return d
}
