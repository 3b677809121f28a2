package tracing_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tracing"
)

func TestNilObserverDecoratesNothing(t *testing.T) {
	o, err := tracing.New(nil, nil, tracing.Options{})
	if o != nil || err != nil {
		t.Fatalf("New(nil, nil) = %v, %v", o, err)
	}
	tl := tool.New("t", "", func(context.Context, tool.Call, struct{}) (tool.Result, error) { return tool.Result{}, nil })
	if o.Tool(tl) != tl {
		t.Error("a nil observer wrapped a tool")
	}
}

type failingModel struct{}

func (failingModel) ID() string { return "broken" }
func (failingModel) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if !yield(model.Chunk{Kind: model.ChunkText, Text: "secret-free text"}, nil) {
			return
		}
		yield(model.Chunk{}, errors.New("upstream exploded"))
	}
}

type pricedModel struct{ failingModel }

func (pricedModel) Price() (float64, float64) { return 3, 15 }

// TestModelAndToolSpans checks the chat and execute_tool spans' errors,
// that contents are captured only when opted in, and that the decorators
// keep a model's price and a tool's title.
func TestModelAndToolSpans(t *testing.T) {
	for _, capture := range []bool{false, true} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		o, err := tracing.New(tp, nil, tracing.Options{CaptureContent: &capture})
		if err != nil {
			t.Fatal(err)
		}
		m := o.Model(failingModel{})
		for _, err := range m.Stream(context.Background(), &model.Request{System: "be brief", Messages: []model.Message{model.UserText("hello there")}}) {
			if err != nil {
				break
			}
		}
		if model.Cost(o.Model(pricedModel{}), event.Usage{InputTokens: 1e6}) != 3 {
			t.Error("the decorated model lost its price")
		}
		tl := tool.WithTitle(tool.New("lookup", "", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
			return tool.Errorf("not found"), nil
		}), func(tool.Call) string { return "Looking up" })
		wrapped := o.Tool(tl)
		call := tool.Call{ID: "call_1", Name: "lookup", Args: []byte(`{"q":"x"}`)}
		if tool.Title(wrapped, call) != "Looking up" {
			t.Error("the decorated tool lost its title")
		}
		tool.Run(context.Background(), wrapped, call)
		tp.Shutdown(context.Background())

		spans := rec.Ended()
		if len(spans) != 2 {
			t.Fatalf("%d spans, want 2", len(spans))
		}
		got := map[string]map[string]string{}
		for _, s := range spans {
			a := map[string]string{"status": s.Status().Code.String()}
			for _, kv := range s.Attributes() {
				a[string(kv.Key)] = kv.Value.String()
			}
			got[s.Name()] = a
		}
		chat, exec := got["chat broken"], got["execute_tool lookup"]
		if chat["status"] != "Error" || chat["error.type"] != "*errors.errorString" {
			t.Errorf("chat span %v: want an error with error.type", chat)
		}
		if exec["status"] != "Error" || exec["error.type"] != "tool_error" || exec["gen_ai.tool.call.id"] != "call_1" {
			t.Errorf("execute_tool span %v", exec)
		}
		_, in := chat["gen_ai.input.messages"]
		_, args := exec["gen_ai.tool.call.arguments"]
		if in != capture || args != capture {
			t.Errorf("capture=%v: input messages %v, tool arguments %v", capture, in, args)
		}
		if capture && (!strings.Contains(chat["gen_ai.input.messages"], "hello there") || !strings.Contains(chat["gen_ai.output.messages"], "secret-free text") || exec["gen_ai.tool.call.result"] != "not found") {
			t.Errorf("captured contents: %v / %v", chat, exec)
		}
	}
}
