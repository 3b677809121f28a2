package acp

import (
	"testing"

	"github.com/agentpool/agentpool/tracing/tracingtest"
)

// TestPromptTraceparent checks that session/prompt's _meta.traceparent
// makes the client's span the parent of the run's root span, and that a
// prompt without one, or with a traceparent that is not a string, starts
// a trace of its own (and still runs).
func TestPromptTraceparent(t *testing.T) {
	p, rec := tracingtest.TracedPool(t, nestedYAML)
	h := startServer(t, p, Options{})
	defer h.close()
	h.initialize(false)

	traced, plain, odd := h.newSession(), h.newSession(), h.newSession()
	params := promptParams(traced, "Plan the research")
	params["_meta"] = map[string]any{"traceparent": tracingtest.Traceparent, "other": 1}
	oddParams := promptParams(odd, "Plan the research")
	oddParams["_meta"] = map[string]any{"traceparent": 42}
	for _, ps := range []map[string]any{params, promptParams(plain, "Plan the research"), oddParams} {
		if w, _ := h.call("session/prompt", ps); stopReason(t, w) != stopEndTurn {
			t.Fatalf("prompt %v: %s", ps["sessionId"], w.line)
		}
	}

	tracingtest.CheckRootParents(t, rec.Ended(), traced, plain, odd)
}
