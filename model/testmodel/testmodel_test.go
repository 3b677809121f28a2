package testmodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
)

type turn struct {
	text, thinking string
	calls          []model.Part
	usage          bool
	finish         string
	chunks         int
	err            error
}

func collect(t *testing.T, m model.Model, ctx context.Context, msgs []model.Message) turn {
	t.Helper()
	var out turn
	var args []strings.Builder
	for c, err := range m.Stream(ctx, &model.Request{Messages: msgs}) {
		if err != nil {
			out.err = err
			break
		}
		out.chunks++
		switch c.Kind {
		case model.ChunkText:
			out.text += c.Text
		case model.ChunkThinking:
			out.thinking += c.Text
		case model.ChunkToolCall:
			if c.ToolCallID != "" {
				out.calls = append(out.calls, model.Part{Kind: model.PartToolCall, ToolCallID: c.ToolCallID, ToolName: c.ToolName})
				args = append(args, strings.Builder{})
			}
			args[c.Index].WriteString(c.ArgsDelta)
		case model.ChunkUsage:
			out.usage = c.Usage.InputTokens > 0 && c.Usage.OutputTokens > 0
		case model.ChunkFinish:
			out.finish = c.FinishReason
		}
	}
	for i := range out.calls {
		out.calls[i].Args = json.RawMessage(args[i].String())
	}
	return out
}

func TestAgentPoolTestModel(t *testing.T) {
	m, err := testmodel.New(testmodel.Config{
		Text:      "Plan complete and delivered.",
		CallTools: []string{"task", "list_available_nodes"},
		ToolArgs:  map[string]map[string]any{"task": {"agent_or_team": "team", "prompt": "go"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []model.Message{model.UserText("hello")}
	first := collect(t, m, context.Background(), msgs)
	if len(first.calls) != 2 || first.calls[0].ToolName != "task" || first.calls[1].ToolName != "list_available_nodes" {
		t.Fatalf("first response calls %+v", first.calls)
	}
	var a map[string]any
	if err := json.Unmarshal(first.calls[0].Args, &a); err != nil || a["agent_or_team"] != "team" {
		t.Fatalf("task args %s (%v)", first.calls[0].Args, err)
	}
	if string(first.calls[1].Args) != "{}" {
		t.Fatalf("default args %s", first.calls[1].Args)
	}
	if first.finish != model.FinishToolCalls || !first.usage {
		t.Fatalf("finish %q usage %v", first.finish, first.usage)
	}
	msgs = append(msgs, model.Message{Role: model.RoleAssistant, Parts: first.calls},
		model.Message{Role: model.RoleTool, Parts: []model.Part{{Kind: model.PartToolResult, Text: "ok"}}})
	second := collect(t, m, context.Background(), msgs)
	if second.text != "Plan complete and delivered." || len(second.calls) != 0 || second.finish != model.FinishStop {
		t.Fatalf("second response %+v", second)
	}
	if second.chunks < 5 {
		t.Fatalf("text not streamed in several deltas: %d chunks", second.chunks)
	}
	// An injected (synthetic) message does not restart the script.
	msgs = append(msgs, model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "x"}}},
		model.Message{Role: model.RoleUser, Synthetic: true, Parts: []model.Part{{Kind: model.PartText, Text: "bg done"}}})
	if third := collect(t, m, context.Background(), msgs); len(third.calls) != 0 {
		t.Fatal("synthetic message restarted the tool calls")
	}
	// A new user prompt does.
	msgs = append(msgs, model.UserText("again"))
	if again := collect(t, m, context.Background(), msgs); len(again.calls) != 2 {
		t.Fatal("a new prompt did not call the tools again")
	}
}

func TestPlainTestModelEchoes(t *testing.T) {
	m, _ := testmodel.New(testmodel.Config{})
	got := collect(t, m, context.Background(), []model.Message{model.UserText("ping")})
	if !strings.Contains(got.text, "ping") {
		t.Fatalf("text %q", got.text)
	}
}

func TestScriptedTurns(t *testing.T) {
	m, err := testmodel.New(testmodel.Config{Turns: []testmodel.Turn{
		{Thinking: "let me think", ToolCalls: []testmodel.ToolCall{{Name: "a"}, {Name: "b", Args: map[string]any{"x": 1}}}},
		{Text: "partial", Error: "provider exploded"},
		{Text: "final", FinishReason: model.FinishLength},
	}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []model.Message{model.UserText("go")}
	t1 := collect(t, m, context.Background(), msgs)
	if t1.thinking != "let me think" || len(t1.calls) != 2 || string(t1.calls[1].Args) != `{"x":1}` {
		t.Fatalf("turn 1 %+v", t1)
	}
	msgs = append(msgs, model.Message{Role: model.RoleAssistant})
	t2 := collect(t, m, context.Background(), msgs)
	if t2.text != "partial" || t2.err == nil || t2.err.Error() != "provider exploded" {
		t.Fatalf("turn 2 %+v", t2)
	}
	msgs = append(msgs, model.Message{Role: model.RoleAssistant})
	if t3 := collect(t, m, context.Background(), msgs); t3.text != "final" || t3.finish != model.FinishLength {
		t.Fatalf("turn 3 %+v", t3)
	}
	// Past the end: the last turn's text, no tool calls.
	msgs = append(msgs, model.Message{Role: model.RoleAssistant})
	if t4 := collect(t, m, context.Background(), msgs); t4.text != "final" || len(t4.calls) != 0 {
		t.Fatalf("turn 4 %+v", t4)
	}
}

func TestDelayHonoursCancellation(t *testing.T) {
	m, _ := testmodel.New(testmodel.Config{Text: "one two three four five six", Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	got := collect(t, m, ctx, []model.Message{model.UserText("x")})
	if !errors.Is(got.err, context.Canceled) {
		t.Fatalf("err %v", got.err)
	}
}

func TestEarlyStopIsSafe(t *testing.T) {
	m, _ := testmodel.New(testmodel.Config{Text: "one two three"})
	for range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.UserText("x")}}) {
		break // must not panic (yield is not called again)
	}
}
