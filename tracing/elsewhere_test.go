package tracing_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tracing"
)

// Under WithoutSpans (workflow code, which replays) the decorators make
// no span; a traced delegation tool is still one that runs inline.
func TestWithoutSpansAndInline(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	o, err := tracing.New(tp, nil, tracing.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := tracing.WithoutSpans(context.Background())
	for range o.Model(failingModel{}).Stream(ctx, &model.Request{}) {
	}
	tl := o.Tool(tool.New("t", "", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		return tool.Result{Content: "ok"}, nil
	}))
	if res := tool.Run(ctx, tl, tool.Call{ID: "c", Name: "t", Args: []byte(`{}`)}); res.Content != "ok" {
		t.Fatalf("the tool under WithoutSpans answered %+v", res)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("%d spans made under WithoutSpans", n)
	}
	if _, err := tl.Call(context.Background(), tool.Call{ID: "c", Name: "t", Args: []byte(`{}`)}); err != nil || len(rec.Ended()) != 1 {
		t.Errorf("a call outside WithoutSpans: %v, %d spans, want 1", err, len(rec.Ended()))
	}

	w := spawn.WorkerTool("helper", "", spawn.WorkerOptions{})
	if !spawn.IsInline(w) || !spawn.IsInline(o.Tool(w)) {
		t.Errorf("IsInline: plain %v, traced %v; want both true", spawn.IsInline(w), spawn.IsInline(o.Tool(w)))
	}
	if spawn.IsInline(tl) {
		t.Error("a traced ordinary tool claims to run inline")
	}
}
