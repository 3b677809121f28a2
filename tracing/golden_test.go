package tracing_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/tracing/tracingtest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runNested runs examples/nested.yaml (its scripted and test models: no
// network) on a pool traced by tp (nil: not traced) and returns how it
// ended and how many events of each kind its stream had, after checking
// the stream's invariants.
func runNested(t testing.TB, tp *sdktrace.TracerProvider) (pool.RunResult, map[string]int) {
	t.Helper()
	m, err := config.Load(filepath.Join("..", "examples", "nested.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := pool.Options{}
	if tp != nil {
		opts.TracerProvider = tp
	}
	p, err := pool.New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "Write a note about nested teams"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	evs := events()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, e := range evs {
		_, inner := event.Unwrap(res.SessionID, e)
		kinds[fmt.Sprintf("%T", inner)]++
	}
	return res, kinds
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
	res, kinds := runNested(t, tp)
	// Tracing observes: the stream is the one an untraced run has.
	if _, plain := runNested(t, nil); !maps.Equal(kinds, plain) {
		t.Errorf("events of a traced run %v, of an untraced one %v", kinds, plain)
	}
	spans := tracingtest.FromSDK(rec.Ended())
	got, err := tracingtest.Render(spans)
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
	checkConversation(t, spans, res.SessionID)
	golden(t, filepath.Join("testdata", "nested.golden"), got)
}

// checkConversation checks that every GenAI span of the run (sessions,
// model calls, tool calls, at every depth) names the root session as its
// conversation, and that the run had model and tool calls in child
// sessions, so that the check covers them.
func checkConversation(t *testing.T, spans []*tracingtest.Span, root string) {
	t.Helper()
	byID := map[string]*tracingtest.Span{}
	for _, s := range spans {
		byID[s.ID()] = s
	}
	// depth is the agentpool.depth of the session span s runs in.
	depth := func(s *tracingtest.Span) string {
		for ; s != nil; s = byID[s.ParentID()] {
			if d := s.Attr("agentpool.depth"); d != "" {
				return d
			}
		}
		return ""
	}
	inChild := map[string]int{}
	for _, s := range spans {
		op := s.Attr("gen_ai.operation.name")
		if op == "" {
			continue
		}
		if got := s.Attr("gen_ai.conversation.id"); got != root {
			t.Errorf("span %s: gen_ai.conversation.id %q, want the root session %s", s.Name(), got, root)
		}
		if d := depth(s); d != "" && d != "0" {
			inChild[op]++
		}
	}
	for _, op := range []string{"chat", "execute_tool", "invoke_agent"} {
		if inChild[op] == 0 {
			t.Errorf("no %s span in a child session (%v): the check covers none", op, inChild)
		}
	}
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
