package otelpool_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/otelpool/otelpooltest"
	"github.com/agentpool/agentpool/pool"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runNested runs examples/nested.yaml (its scripted and test models: no
// network) on a pool traced into rec.
func runNested(t testing.TB, tp *sdktrace.TracerProvider) pool.RunResult {
	t.Helper()
	m, err := config.Load(filepath.Join("..", "..", "examples", "nested.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "Write a note about nested teams"}, event.SinkFunc(func(event.Event) {}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	return res
}

// TestNestedSpanTree checks the span tree of the nested example against
// testdata/nested.golden: every session a span under the tool call or team
// that started it, every model call a chat span, every tool call an
// execute_tool span, with their attributes.
func TestNestedSpanTree(t *testing.T) {
	t.Setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	res := runNested(t, tp)
	spans := otelpooltest.FromSDK(rec.Ended())
	got, err := otelpooltest.Render(spans)
	if err != nil {
		t.Fatal(err)
	}
	// The root session span names the run's session as agent and
	// conversation.
	for _, s := range spans {
		if s.Root() && (s.Attr("gen_ai.agent.id") != res.SessionID || s.Attr("gen_ai.conversation.id") != res.SessionID) {
			t.Errorf("root span %s: ids %s, %s, want the session %s", s.Name(), s.Attr("gen_ai.agent.id"), s.Attr("gen_ai.conversation.id"), res.SessionID)
		}
	}
	golden(t, filepath.Join("testdata", "nested.golden"), got)
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("span tree differs from %s (run with -update to accept):\n%s", path, got)
	}
}
