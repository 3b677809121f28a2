package durable

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/tool"
)

// repeatModel's first response calls "count" with ids a, a, b, c; its
// later ones answer "done".
type repeatModel struct {
	mu sync.Mutex
	n  int
}

func (*repeatModel) ID() string { return "repeat" }

func (m *repeatModel) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	m.mu.Lock()
	m.n++
	first := m.n == 1
	m.mu.Unlock()
	return func(yield func(model.Chunk, error) bool) {
		if !first {
			if yield(model.Chunk{Kind: model.ChunkText, Text: "done"}, nil) {
				yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishStop}, nil)
			}
			return
		}
		for i, id := range []string{"a", "a", "b", "c"} {
			if !yield(model.Chunk{Kind: model.ChunkToolCall, Index: i, ToolCallID: id, ToolName: "count"}, nil) ||
				!yield(model.Chunk{Kind: model.ChunkToolCall, Index: i, ArgsDelta: fmt.Sprintf(`{"n":%d}`, i)}, nil) {
				return
			}
		}
		yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls}, nil)
	}
}

// TestDuplicateToolCallIDAndCapInWorkflow: under the Temporal engine, as
// in process, a repeated tool call id and the calls past
// MaxToolCallsPerTurn are not run (no tool activity) and get error
// results; the stored conversation has unique ids, one result each.
func TestDuplicateToolCallIDAndCapInWorkflow(t *testing.T) {
	var mu sync.Mutex
	var ran []int
	count := tool.New("count", "counts", func(_ context.Context, _ tool.Call, a struct{ N int }) (tool.Result, error) {
		mu.Lock()
		ran = append(ran, a.N)
		mu.Unlock()
		return tool.Result{Content: fmt.Sprint("counted ", a.N)}, nil
	})
	p, err := pool.Build(pool.Config{Agents: []pool.AgentSpec{
		{Name: "a", Model: &repeatModel{}, Tools: []tool.Tool{count}, MaxToolCallsPerTurn: 2},
	}}, pool.Options{Store: memory.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	root, out, evs := runWorkflow(t, p, "a", "go", nil)
	if out.StopReason != event.StopCompleted || out.Output != "done" {
		t.Fatalf("end = %+v", out)
	}
	slices.Sort(ran)
	if fmt.Sprint(ran) != "[0 2]" {
		t.Errorf("the tool ran with n = %v, want 0 and 2 (the repeat of a and the call past the cap not run)", ran)
	}
	var refused []string
	for _, e := range evs {
		if c, ok := e.(event.ToolCallComplete); ok && c.IsError {
			refused = append(refused, strings.SplitN(c.ToolResult, ":", 2)[0])
		}
	}
	if want := []string{`duplicate tool call id "a" in one response`, "tool call limit per turn (2) reached"}; !slices.Equal(refused, want) {
		t.Errorf("failed tool calls %q, want %q", refused, want)
	}
	msgs, err := p.Store().Messages(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	ids, results := map[string]int{}, map[string]int{}
	for _, m := range msgs {
		for _, part := range m.Parts {
			switch part.Kind {
			case model.PartToolCall:
				ids[part.ToolCallID]++
			case model.PartToolResult:
				results[part.ToolCallID]++
			}
		}
	}
	for id, n := range ids {
		if n != 1 || results[id] != 1 {
			t.Errorf("stored tool call id %q: %d calls, %d results; want 1 and 1", id, n, results[id])
		}
	}
	if len(ids) != 4 || len(results) != 4 {
		t.Errorf("stored %d call ids and %d results, want 4 and 4", len(ids), len(results))
	}
}
