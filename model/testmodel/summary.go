// The test model's answer to a compaction request (model.Request.Summarize).

package testmodel

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentpool/agentpool/model"
)

// turnsMark ends the test model's summaries with the number of model
// turns since the last prompt a user typed that the summary replaces, so
// that a scripted model plays on at the turn it had reached (turnIndex
// reads it back from the summary message).
const turnsMark = "[test model: turns since the prompt: "

// summaryText is the test model's summary of msgs: deterministic, it
// names how many messages it replaces, the last prompt a user typed
// among them and the turns taken since it.
func summaryText(msgs []model.Message) string {
	prompt := "(none)"
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser && !msgs[i].Synthetic {
			prompt = msgs[i].Text()
			if len(prompt) > 80 {
				prompt = prompt[:80] + "..."
			}
			break
		}
	}
	return fmt.Sprintf("Test model summary of %d messages. Last prompt: %q. %s%d]", len(msgs), prompt, turnsMark, turnIndex(msgs))
}

// summarisedTurns reads the turns a test model summary in m counted, if
// m is such a summary (a message the runtime added).
func summarisedTurns(m model.Message) (int, bool) {
	if m.Role != model.RoleUser || !m.Synthetic {
		return 0, false
	}
	t := m.Text()
	i := strings.LastIndex(t, turnsMark)
	if i < 0 {
		return 0, false
	}
	rest := t[i+len(turnsMark):]
	j := strings.IndexByte(rest, ']')
	if j < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(rest[:j])
	return n, err == nil && n >= 0
}
