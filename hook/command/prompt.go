// The UserPromptSubmit event.

package command

import (
	"context"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/spawn"
)

// promptSubmit runs UserPromptSubmit for the user's prompt: the prompt of
// a root run (an agent's, or a root team's through pool's root gate). The
// prompts a delegation gives a subagent, a worker or a team member are no
// user's prompts and pass by, as in Claude Code, where a subagent's prompt
// reaches no UserPromptSubmit hook.
func (b *Bridge) promptSubmit(ctx context.Context, in hook.Prompt, next hook.Next[hook.Prompt, hook.PromptDecision]) hook.PromptDecision {
	if inv := spawn.InvocationFrom(ctx); inv != nil && inv.Session.ID == in.SessionID && inv.Session.ParentID != "" {
		return next(ctx, in)
	}
	payload := b.common(ctx, in.SessionID, in.Agent)
	payload["prompt"] = in.Content
	runs := b.fire(ctx, firing{event: UserPromptSubmit, payload: payload})
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
