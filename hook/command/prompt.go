// The UserPromptSubmit event.

package command

import (
	"context"

	"github.com/agentpool/agentpool/hook"
)

func (b *Bridge) promptSubmit(ctx context.Context, in hook.Prompt, next hook.Next[hook.Prompt, hook.PromptDecision]) hook.PromptDecision {
	payload := b.common(ctx, in.SessionID)
	payload["prompt"] = in.Content
	runs := b.fire(ctx, UserPromptSubmit, "", payload, HookRun{})
	var reasons, ctxs []string
	for _, r := range runs {
		switch r.v.decision {
		case vBlock:
			reasons = append(reasons, r.v.reason)
		case vStop:
			reasons = append(reasons, r.v.stopReason)
		}
		ctxs = append(ctxs, r.v.context)
	}
	if len(reasons) > 0 {
		return hook.PromptDecision{Block: true, Reason: joinNonEmpty(reasons)}
	}
	d := next(ctx, in)
	if !d.Block {
		d.Context = joinNonEmpty(append(ctxs, d.Context))
	}
	return d
}
