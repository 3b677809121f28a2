// Tool events: PreToolUse, PostToolUse and PostToolUseFailure.

package command

import (
	"context"
	"encoding/json"

	"github.com/agentpool/agentpool/agent"
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

// toolPayload is the common payload of a tool event, with the tool in
// Claude Code's vocabulary.
func (b *Bridge) toolPayload(ctx context.Context, c hook.ToolCall) (map[string]any, toolView) {
	v := presentTool(c.ToolName, c.Input)
	payload := b.common(ctx, c.SessionID, c.Agent)
	payload["tool_name"] = v.name
	payload["tool_input"] = v.input
	payload["tool_use_id"] = c.CallID
	return payload, v
}

func (b *Bridge) preToolUse(ctx context.Context, in hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
	payload, v := b.toolPayload(ctx, in)
	runs := b.fire(ctx, firing{event: PreToolUse, targets: append([]string{v.name}, v.aliases...), payload: payload,
		tmpl: HookRun{ToolName: v.name, ToolUseID: in.CallID}})
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
			updated = fromClaude(in.ToolName, r.v.updatedInput)
		}
	}
	if best == vDeny {
		reason := joinNonEmpty(reasons)
		if reason == "" {
			reason = "denied by a PreToolUse hook"
		}
		return agent.ToolDecision{Action: agent.ToolDeny, Reason: reason}
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

// postToolUse runs PostToolUse after a tool that succeeded and
// PostToolUseFailure after one that failed, as Claude Code does. A block
// (or exit 2) adds the reason to the result the model sees;
// additionalContext goes to the model's next request.
func (b *Bridge) postToolUse(ctx context.Context, in hook.ToolOutcome, next hook.Next[hook.ToolOutcome, hook.PostDecision]) hook.PostDecision {
	ev := PostToolUse
	if in.IsError {
		ev = PostToolUseFailure
	}
	if !b.Has(ev) {
		return next(ctx, in)
	}
	payload, v := b.toolPayload(ctx, in.ToolCall)
	if ev == PostToolUse {
		payload["tool_response"] = toolResponse(in.ToolName, in.Result)
	} else {
		payload["error"] = in.Result
		payload["is_interrupt"] = in.Interrupted
	}
	payload["duration_ms"] = in.DurationMS
	runs := b.fire(ctx, firing{event: ev, targets: append([]string{v.name}, v.aliases...), payload: payload,
		tmpl: HookRun{ToolName: v.name, ToolUseID: in.CallID}})
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
