package durable

import (
	"fmt"

	"github.com/agentpool/agentpool/event"
)

// MaxResultText bounds the text of a session's result that travels
// through Temporal: its workflow result's output (what its parent's tool
// result or the submitter gets) and the text of the events its workflow
// emits (stream_complete, spawn_session_end's last message). Temporal
// refuses a payload over 2 MB: a parallel team of thousands of members
// joins their answers into one output (2,500 members made 4.95 MB). Past
// the bound the text is cut, with a note; each member's whole answer is
// in its own session, in the store.
const MaxResultText = 256 << 10

// boundText cuts s to MaxResultText bytes (at a rune boundary), with a
// note saying how much was left out and where the rest is.
func boundText(s string) string {
	if len(s) <= MaxResultText {
		return s
	}
	n := MaxResultText
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + fmt.Sprintf("\n\n[cut: %d more bytes; under the Temporal engine a result is at most %d bytes, and each child's whole answer is in its own session]", len(s)-n, MaxResultText)
}

// boundEvent is e with its result text bounded (boundText).
func boundEvent(e event.Event) event.Event {
	switch x := e.(type) {
	case event.StreamComplete:
		if len(x.Message.Content) > MaxResultText {
			x.Message.Content = boundText(x.Message.Content)
			return x
		}
	case event.SpawnSessionEnd:
		if len(x.LastAssistantMessage) > MaxResultText {
			x.LastAssistantMessage = boundText(x.LastAssistantMessage)
			return x
		}
	}
	return e
}
