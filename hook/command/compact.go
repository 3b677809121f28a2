// PreCompact: older turns of a conversation are about to be summarised.

package command

import (
	"context"

	"github.com/agentpool/agentpool/hook"
)

// preCompact runs the PreCompact hooks, matched by the trigger ("auto" or
// "manual") as in Claude Code. They cannot stop the compaction (Claude
// Code's exit code 2 only shows stderr); their runs are recorded in the
// session's log.
func (b *Bridge) preCompact(ctx context.Context, p hook.PreCompact) error {
	payload := b.common(ctx, p.SessionID, p.Agent)
	payload["trigger"] = p.Trigger
	payload["custom_instructions"] = p.Instructions
	b.fire(ctx, firing{event: PreCompact, targets: []string{p.Trigger}, payload: payload})
	return nil
}
