package tracingtest

import (
	"context"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// The W3C trace context the protocol servers' tests send with a run.
const (
	TraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	SpanID      = "00f067aa0ba902b7"
	Traceparent = "00-" + TraceID + "-" + SpanID + "-01"
)

// TracedPool builds the pool of manifest with a tracer provider whose
// ended spans the returned recorder holds; both are closed at the test's
// end.
func TracedPool(t testing.TB, manifest string) (*pool.Pool, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	m, err := config.Parse("agentpool.yaml", []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, rec
}

// CheckRootParents checks the session spans that start a trace here (no
// parent, or a remote one): session traced's has Traceparent's span as its
// remote parent, each of plain's starts a trace of its own, and there is
// no other.
func CheckRootParents(t testing.TB, ended []sdktrace.ReadOnlySpan, traced string, plain ...string) {
	t.Helper()
	var roots int
	for _, s := range ended {
		if s.Parent().IsValid() && !s.Parent().IsRemote() || !strings.HasPrefix(s.Name(), "invoke_") {
			continue // not a session's root span
		}
		roots++
		switch sid := attrOf(s, "gen_ai.agent.id"); {
		case sid == traced:
			if !s.Parent().IsRemote() || s.Parent().TraceID().String() != TraceID || s.Parent().SpanID().String() != SpanID {
				t.Errorf("root span of the traced run: parent %v, want the traceparent's span", s.Parent())
			}
		case slices.Contains(plain, sid):
			if s.Parent().IsValid() || s.SpanContext().TraceID().String() == TraceID {
				t.Errorf("root span of session %s, run without a traceparent: parent %v", sid, s.Parent())
			}
		default:
			t.Errorf("root span %s of session %q", s.Name(), sid)
		}
	}
	if roots != 1+len(plain) {
		t.Fatalf("%d root spans, want %d", roots, 1+len(plain))
	}
}

func attrOf(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.AsString()
		}
	}
	return ""
}
