package agui

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// TestTraceparentParentsTheRun checks that a run request's W3C
// traceparent header makes the caller's span the parent of the run's root
// span, and that a run without one starts a trace of its own.
func TestTraceparentParentsTheRun(t *testing.T) {
	noLeaks(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	m, err := config.Parse("test.yaml", []byte(nestedYAML))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, ts := newServer(t, p, Options{})

	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, err := http.NewRequest("POST", ts.URL, strings.NewReader(runBody("traced", "hello")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("traceparent", "00-"+traceID+"-"+spanID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	parseSSE(t, readAll(t, resp))
	runOK(t, ts.URL, runBody("plain", "hello"))

	traced, plain := rootOf(t, p.Store(), "traced").ID, rootOf(t, p.Store(), "plain").ID
	var roots int
	for _, s := range rec.Ended() {
		if s.Parent().IsValid() && !s.Parent().IsRemote() {
			continue // not a root span
		}
		roots++
		switch sid := attr(s, "gen_ai.agent.id"); sid {
		case traced:
			if !s.Parent().IsRemote() || s.Parent().TraceID().String() != traceID || s.Parent().SpanID().String() != spanID {
				t.Errorf("root span of the traced run: parent %v, want the traceparent's span", s.Parent())
			}
		case plain:
			if s.Parent().IsValid() || s.SpanContext().TraceID().String() == traceID {
				t.Errorf("root span of a run without traceparent: parent %v", s.Parent())
			}
		default:
			t.Errorf("root span %s of session %q", s.Name(), sid)
		}
	}
	if roots != 2 {
		t.Fatalf("%d root spans, want 2", roots)
	}
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v: %s", resp.StatusCode, err, b)
	}
	return b
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}
