package opencode

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// TestTraceparentParentsTheRun checks that a prompt's W3C traceparent
// header makes the caller's span the parent of the run's root span, and
// that a prompt without one starts a trace of its own.
func TestTraceparentParentsTheRun(t *testing.T) {
	noLeaks(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	m, err := config.Parse("test.yaml", []byte(nestedManifest(t)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, base := newServer(t, p, Options{})

	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	rid := str(createSession(t, base, "")["id"])
	mustCall(t, 200, "POST", base+"/session/"+rid+"/message", promptBody("Write a note about nested teams"),
		"traceparent", "00-"+traceID+"-"+spanID+"-01")
	other := str(createSession(t, base, "")["id"])
	mustCall(t, 200, "POST", base+"/session/"+other+"/message", promptBody("again"))

	var roots int
	for _, s := range rec.Ended() {
		if s.Name() != "invoke_agent lead" {
			continue
		}
		roots++
		switch sid := attr(s, "gen_ai.agent.id"); sid {
		case rid:
			if !s.Parent().IsRemote() || s.Parent().TraceID().String() != traceID || s.Parent().SpanID().String() != spanID {
				t.Errorf("root span of the traced prompt: parent %v, want the traceparent's span", s.Parent())
			}
		case other:
			if s.Parent().IsValid() || s.SpanContext().TraceID().String() == traceID {
				t.Errorf("root span of a prompt without traceparent: parent %v, trace %s", s.Parent(), s.SpanContext().TraceID())
			}
		default:
			t.Errorf("root span of session %q", sid)
		}
	}
	if roots != 2 {
		t.Fatalf("%d root spans, want 2", roots)
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
