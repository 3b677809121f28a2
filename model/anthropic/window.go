package anthropic

import "strings"

// claudeWindow is the context window of the Claude models (3, 3.5, 3.7, 4
// and later), without the 1M-token beta that needs a header agentpool
// does not send.
const claudeWindow = 200_000

// ContextWindow implements model.ContextWindower: 200,000 tokens for a
// "claude-" model id, else 0 (unknown: a gateway's own ids).
func (m *Model) ContextWindow() int {
	if strings.HasPrefix(m.cfg.Model, "claude-") {
		return claudeWindow
	}
	return 0
}
