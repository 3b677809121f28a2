package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/tool"
)

// call is one tool call a callsModel sends.
type call struct{ id, name, args string }

// callsModel answers its first request with the given tool calls (ids
// as given) and every later one with "done"; it keeps the requests.
type callsModel struct {
	calls []call
	mu    sync.Mutex
	reqs  []*model.Request
}

func (*callsModel) ID() string { return "calls" }

func (m *callsModel) Stream(_ context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	first := len(m.reqs) == 1
	m.mu.Unlock()
	return func(yield func(model.Chunk, error) bool) {
		if !first {
			if yield(model.Chunk{Kind: model.ChunkText, Text: "done"}, nil) {
				yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishStop}, nil)
			}
			return
		}
		for i, c := range m.calls {
			if !yield(model.Chunk{Kind: model.ChunkToolCall, Index: i, ToolCallID: c.id, ToolName: c.name}, nil) ||
				!yield(model.Chunk{Kind: model.ChunkToolCall, Index: i, ArgsDelta: c.args}, nil) {
				return
			}
		}
		yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls}, nil)
	}
}

// lastRequest is the conversation the model got on its last turn: what a
// provider would send.
func (m *callsModel) lastRequest() *model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[len(m.reqs)-1]
}

// counter is a tool that records the n of every call it runs.
type counter struct {
	mu  sync.Mutex
	ran []int
}

func (c *counter) tool() tool.Tool {
	return tool.New("count", "counts", func(_ context.Context, _ tool.Call, a struct{ N int }) (tool.Result, error) {
		c.mu.Lock()
		c.ran = append(c.ran, a.N)
		c.mu.Unlock()
		return tool.Result{Content: fmt.Sprint("counted ", a.N)}, nil
	})
}

// checkPairs fails the test unless every tool call of the conversation
// has a unique id and exactly one result, in the next message: what the
// OpenAI and Anthropic APIs require of a conversation.
func checkPairs(t *testing.T, msgs []model.Message) {
	t.Helper()
	for i, m := range msgs {
		calls := m.ToolCalls()
		if len(calls) == 0 {
			continue
		}
		ids := map[string]int{}
		for _, c := range calls {
			ids[c.ToolCallID]++
		}
		results := map[string]int{}
		if i+1 < len(msgs) {
			for _, p := range msgs[i+1].Parts {
				if p.Kind == model.PartToolResult {
					results[p.ToolCallID]++
				}
			}
		}
		for id, n := range ids {
			if n != 1 || results[id] != 1 {
				t.Errorf("message %d: tool call id %q used %d times, answered %d times; want 1 and 1", i, id, n, results[id])
			}
		}
		if len(results) != len(ids) {
			t.Errorf("message %d: %d results for %d calls", i+1, len(results), len(ids))
		}
	}
}

// completes returns the tool_call_complete events by tool call id, and
// checks that every part_start of a tool call has an id of its own.
func completes(t *testing.T, evs []event.Event) map[string]event.ToolCallComplete {
	t.Helper()
	out := map[string]event.ToolCallComplete{}
	parts := map[string]bool{}
	for _, e := range evs {
		switch e := e.(type) {
		case event.ToolCallComplete:
			if _, dup := out[e.ToolCallID]; dup {
				t.Errorf("two tool_call_complete events for %q", e.ToolCallID)
			}
			out[e.ToolCallID] = e
		case event.PartStart:
			if e.Part.PartKind == event.PartToolCall {
				if parts[e.Part.ToolCallID] {
					t.Errorf("two part_start events for tool call %q", e.Part.ToolCallID)
				}
				parts[e.Part.ToolCallID] = true
			}
		}
	}
	return out
}

// TestDuplicateToolCallID: a response with two tool calls of one id runs
// the first only. The second keeps its place in the conversation under a
// fresh id, with an error result that names the id it repeated, so that
// the history stays valid for providers that reject a repeated id; the
// user sees it as a failed tool call.
func TestDuplicateToolCallID(t *testing.T) {
	m := &callsModel{calls: []call{
		{"call_1", "count", `{"n":1}`},
		{"call_1", "count", `{"n":2}`},
		{"call_2", "count", `{"n":3}`},
		{"call_1", "count", `{"n":4}`},
	}}
	var c counter
	a, err := agent.New(agent.Config{Name: "a", Model: m, Tools: []tool.Tool{c.tool()}})
	if err != nil {
		t.Fatal(err)
	}
	res, rec, st := runAgent(t, context.Background(), a, "go")
	if res.StopReason != event.StopCompleted || res.Output != "done" {
		t.Fatalf("result %+v", res)
	}
	c.mu.Lock()
	if fmt.Sprint(c.ran) != "[1 3]" && fmt.Sprint(c.ran) != "[3 1]" {
		t.Errorf("the tool ran with n = %v, want 1 and 3 (the repeated id not run)", c.ran)
	}
	c.mu.Unlock()

	conv := m.lastRequest().Messages
	checkPairs(t, conv)
	stored, err := st.Messages(context.Background(), "ses_root")
	if err != nil {
		t.Fatal(err)
	}
	var kept []model.Message
	for _, s := range stored {
		kept = append(kept, s.Message)
	}
	checkPairs(t, kept)

	calls := conv[1].ToolCalls()
	if len(calls) != 4 {
		t.Fatalf("assistant message has %d tool calls, want all 4", len(calls))
	}
	evs := completes(t, rec.evs)
	for i, want := range []string{"counted 1", "", "counted 3", ""} {
		c := calls[i]
		done, ok := evs[c.ToolCallID]
		if !ok {
			t.Errorf("call %d (%s): no tool_call_complete", i, c.ToolCallID)
			continue
		}
		if want != "" {
			if done.IsError || done.ToolResult != want {
				t.Errorf("call %d: %+v, want %q", i, done, want)
			}
			continue
		}
		if c.ToolCallID == "call_1" || c.DuplicateOf != "call_1" || !json.Valid(c.Args) {
			t.Errorf("repeated call %d kept id %q (duplicate of %q), want a fresh one", i, c.ToolCallID, c.DuplicateOf)
		}
		if !done.IsError || !strings.Contains(done.ToolResult, `duplicate tool call id "call_1"`) || !strings.Contains(done.ToolResult, "not run") {
			t.Errorf("repeated call %d: tool_call_complete %+v, want an error naming the id", i, done)
		}
	}
	for _, p := range conv[2].Parts {
		if p.ToolCallID != "call_1" && p.ToolCallID != "call_2" && (!p.IsError || !strings.Contains(p.Text, "duplicate tool call id")) {
			t.Errorf("result %+v of a repeated call, want an error the model reads", p)
		}
	}
}

// TestToolCallsPerTurnCap: of one response's tool calls, the first
// MaxToolCallsPerTurn run; each later one is not run and gets an error
// result the model reads and a failed tool_call_complete the user sees.
func TestToolCallsPerTurnCap(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cap, want int // want: the cap in effect
	}{
		{"default", 0, agent.DefaultMaxToolCallsPerTurn},
		{"configured", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.want + 2
			m := &callsModel{}
			for i := range n {
				m.calls = append(m.calls, call{fmt.Sprint("call_", i), "count", fmt.Sprintf(`{"n":%d}`, i)})
			}
			var c counter
			a, err := agent.New(agent.Config{Name: "a", Model: m, Tools: []tool.Tool{c.tool()}, MaxToolCallsPerTurn: tc.cap})
			if err != nil {
				t.Fatal(err)
			}
			res, rec, _ := runAgent(t, context.Background(), a, "go")
			if res.StopReason != event.StopCompleted {
				t.Fatalf("result %+v", res)
			}
			c.mu.Lock()
			ran := len(c.ran)
			for _, n := range c.ran {
				if n >= tc.want {
					t.Errorf("call %d ran, past the cap of %d", n, tc.want)
				}
			}
			c.mu.Unlock()
			if ran != tc.want {
				t.Errorf("%d calls ran, want %d", ran, tc.want)
			}
			conv := m.lastRequest().Messages
			checkPairs(t, conv)
			evs := completes(t, rec.evs)
			wantMsg := fmt.Sprintf("tool call limit per turn (%d) reached", tc.want)
			for i, p := range conv[2].Parts {
				done := evs[p.ToolCallID]
				if i < tc.want {
					if p.IsError || done.IsError {
						t.Errorf("call %d: %+v / %+v, want it run", i, p, done)
					}
					continue
				}
				if !p.IsError || !strings.HasPrefix(p.Text, wantMsg) {
					t.Errorf("call %d: result %+v, want an error starting %q", i, p, wantMsg)
				}
				if !done.IsError || done.ToolResult != p.Text {
					t.Errorf("call %d: tool_call_complete %+v, want the same error", i, done)
				}
			}
		})
	}
}
