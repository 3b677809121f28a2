package acp

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// TestPromptTraceparent checks that session/prompt's _meta.traceparent
// makes the client's span the parent of the run's root span, and that a
// prompt without one, or with a traceparent that is not a string, starts
// a trace of its own (and still runs).
func TestPromptTraceparent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	m, err := config.Parse("agentpool.yaml", []byte(nestedYAML))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	h := startServer(t, p, Options{})
	defer h.close()
	h.initialize(false)

	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	traced, plain, odd := h.newSession(), h.newSession(), h.newSession()
	params := promptParams(traced, "Plan the research")
	params["_meta"] = map[string]any{"traceparent": "00-" + traceID + "-" + spanID + "-01", "other": 1}
	oddParams := promptParams(odd, "Plan the research")
	oddParams["_meta"] = map[string]any{"traceparent": 42}
	for _, ps := range []map[string]any{params, promptParams(plain, "Plan the research"), oddParams} {
		if w, _ := h.call("session/prompt", ps); stopReason(t, w) != stopEndTurn {
			t.Fatalf("prompt %v: %s", ps["sessionId"], w.line)
		}
	}

	var roots int
	for _, s := range rec.Ended() {
		if s.Parent().IsValid() && !s.Parent().IsRemote() {
			continue // not a root span
		}
		roots++
		switch sid := attr(s, "gen_ai.agent.id"); sid {
		case traced:
			if !s.Parent().IsRemote() || s.Parent().TraceID().String() != traceID || s.Parent().SpanID().String() != spanID {
				t.Errorf("root span of the traced prompt: parent %v, want the traceparent's span", s.Parent())
			}
		case plain, odd:
			if s.Parent().IsValid() || s.SpanContext().TraceID().String() == traceID {
				t.Errorf("root span of a prompt without a traceparent string: parent %v", s.Parent())
			}
		default:
			t.Errorf("root span %s of session %q", s.Name(), sid)
		}
	}
	if roots != 3 {
		t.Fatalf("%d root spans, want 3", roots)
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}
