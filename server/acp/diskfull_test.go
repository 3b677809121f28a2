package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
)

// TestDiskFullDuringRun (ACP): a prompt whose run finds the store full
// before its last writes streams the answer as updates and is answered
// with a JSON-RPC error that names the store and the cause, never a stop
// reason; once there is room again the session reads error after another
// session's prompt, and takes prompts again.
func TestDiskFullDuringRun(t *testing.T) {
	p, st := servertest.FaultyPool(t, `
agents:
  boss:
    model: {type: scripted, turns: ["the answer", "the answer", "the answer"]}
`)
	h := startServer(t, p, Options{})
	h.initialize(false)

	// A first prompt takes n writes; the last few of the next session's
	// first prompt find the disk full (the answer has been produced).
	clean, full := h.newSession(), h.newSession()
	before := st.Writes()
	if w, _ := h.call("session/prompt", promptParams(clean, "go")); stopReason(t, w) != stopEndTurn {
		t.Fatalf("the prompt without a fault: %s", w.line)
	}
	st.FailAfter(st.Writes() - before - 3)
	w, notes := h.call("session/prompt", promptParams(full, "go"))
	if w.Error == nil || w.Error.Code != codeInternalError || !strings.Contains(w.Error.Message, "store faulty store: no space left on device") {
		t.Fatalf("prompt answered %s, want a JSON-RPC error that names the store and the cause", w.line)
	}
	var text strings.Builder
	for _, n := range notes {
		var c struct{ Text string }
		if n.Update.SessionUpdate == "agent_message_chunk" && json.Unmarshal(n.Update.Content, &c) == nil {
			text.WriteString(c.Text)
		}
	}
	if !strings.Contains(text.String(), "the answer") {
		t.Errorf("the answer was not streamed: %q", text.String())
	}

	st.Lift()
	if w, _ := h.call("session/prompt", promptParams(clean, "again")); stopReason(t, w) != stopEndTurn {
		t.Fatalf("a prompt once the store has room: %s", w.line)
	}
	if rec, err := p.Store().GetSession(context.Background(), full); err != nil || rec.Status != session.StatusError {
		t.Errorf("the session reads %s (%v) once the store has room, want error", rec.Status, err)
	}
	if w, _ := h.call("session/prompt", promptParams(full, "again")); stopReason(t, w) != stopEndTurn {
		t.Fatalf("the failed session's next prompt: %s", w.line)
	}
}
