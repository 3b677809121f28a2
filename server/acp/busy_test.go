package acp

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/server/internal/servertest"
)

// A prompt for a session that another run holds (another process on the
// same database, as far as the store can tell) is refused with an
// invalid-request error that says where the session runs; once that run
// has let go, the prompt runs.
func TestPromptRefusedWhileAnotherRunHoldsTheSession(t *testing.T) {
	p := servertest.Pool(t, nestedYAML)
	h := startServer(t, p, Options{})
	h.initialize(false)
	sid := h.newSession()
	ctx := context.Background()
	if err := p.Store().Claim(ctx, sid); err != nil {
		t.Fatal(err)
	}
	w, _ := h.call("session/prompt", promptParams(sid, "hello"))
	if w.Error == nil || w.Error.Code != codeInvalidRequest || !strings.Contains(w.Error.Message, "is already running (in process") {
		t.Fatalf("prompt of a session another run holds: %+v %s", w.Error, w.Result)
	}
	if err := p.Store().Release(ctx, sid); err != nil {
		t.Fatal(err)
	}
	w, _ = h.call("session/prompt", promptParams(sid, "hello"))
	if got := stopReason(t, w); got != stopEndTurn {
		t.Fatalf("prompt after the release: %s", got)
	}
}
