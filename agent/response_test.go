package agent_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
)

// flood is a model whose one response is n chunks of size bytes each, of
// kind text, thinking or tool call arguments, then a finish. It counts the
// chunks the agent took.
type flood struct {
	kind    model.ChunkKind
	n, size int
	taken   atomic.Int64
}

func (*flood) ID() string { return "flood" }

func (f *flood) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		piece := strings.Repeat("x", f.size)
		for i := range f.n {
			c := model.Chunk{Kind: f.kind, Text: piece}
			if f.kind == model.ChunkToolCall {
				c = model.Chunk{Kind: f.kind, ArgsDelta: piece}
				if i == 0 {
					c.ToolCallID, c.ToolName = "call_1", "echo"
				}
			}
			f.taken.Add(1)
			if !yield(c, nil) {
				return
			}
		}
		yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishStop}, nil)
	}
}

// TestResponseCap: one model response larger than the cap (the default
// one, DefaultMaxResponseBytes, and a configured one; text, thinking and
// tool call arguments alike) ends the run with a clear error as soon as
// it passes the cap: the rest of the stream is not read, so memory stays
// bounded whatever the model sends.
func TestResponseCap(t *testing.T) {
	const chunk = 64 << 10
	for _, tc := range []struct {
		name string
		cap  int // 0: the default
		kind model.ChunkKind
	}{
		{"default text", 0, model.ChunkText},
		{"configured thinking", 1 << 20, model.ChunkThinking},
		{"configured tool args", 1 << 20, model.ChunkToolCall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.cap
			if limit == 0 {
				limit = agent.DefaultMaxResponseBytes
			}
			m := &flood{kind: tc.kind, n: 2 * limit / chunk, size: chunk}
			a, err := agent.New(agent.Config{Name: "a", Model: m, MaxResponseBytes: tc.cap})
			if err != nil {
				t.Fatal(err)
			}
			res, rec, _ := runAgent(t, context.Background(), a, "go")
			if res.StopReason != event.StopError || !errors.Is(res.Err, agent.ErrResponseTooLarge) {
				t.Fatalf("result: stop %s, err %v", res.StopReason, res.Err)
			}
			last, _ := rec.evs[len(rec.evs)-1].(event.RunError)
			if last.Code != "max_response_bytes" || !strings.Contains(last.Message, "larger than") {
				t.Errorf("run_error %+v", last)
			}
			if taken := int(m.taken.Load()); taken > limit/chunk+1 {
				t.Errorf("the agent read %d chunks of %d bytes past a cap of %d bytes", taken, chunk, limit)
			}
		})
	}
	// At the cap exactly, the response is fine.
	m := &flood{kind: model.ChunkText, n: 16, size: chunk}
	a, _ := agent.New(agent.Config{Name: "a", Model: m, MaxResponseBytes: 16 * chunk})
	if res, _, _ := runAgent(t, context.Background(), a, "go"); res.StopReason != event.StopCompleted || len(res.Output) != 16*chunk {
		t.Errorf("a response at the cap: stop %s, %d bytes", res.StopReason, len(res.Output))
	}
}
