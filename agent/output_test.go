package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
)

var verdict = &agent.Output{
	Name: "Verdict", Description: "a verdict", Retries: 1,
	Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"},"score":{"type":"integer","minimum":0}},"required":["ok"]}`),
}

// seenRequests wraps a model and keeps the Output of every request.
type seenRequests struct {
	model.Model
	mu      sync.Mutex
	outputs []*model.OutputSchema
}

func (s *seenRequests) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	s.mu.Lock()
	s.outputs = append(s.outputs, req.Output)
	s.mu.Unlock()
	return s.Model.Stream(ctx, req)
}

func structured(r *recorder) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.evs {
		if c, ok := e.(event.Custom); ok && c.EventType == agent.EventStructuredOutput {
			out = append(out, c.EventData)
		}
	}
	return out
}

// A structured answer is asked for in every request, checked, announced
// and returned as the output; a fenced answer is accepted.
func TestStructuredOutputAccepted(t *testing.T) {
	m := &seenRequests{Model: scripted(t, testmodel.Turn{Text: "```json\n{\"ok\": true, \"score\": 3}\n```"})}
	a, err := agent.New(agent.Config{Name: "judge", Model: m, Output: verdict})
	if err != nil {
		t.Fatal(err)
	}
	res, rec, _ := runAgent(t, context.Background(), a, "judge this")
	if res.StopReason != event.StopCompleted || res.Output != `{"ok": true, "score": 3}` {
		t.Fatalf("result = %+v", res)
	}
	if len(m.outputs) != 1 || m.outputs[0] == nil || m.outputs[0].Name != "Verdict" || string(m.outputs[0].Schema) != string(verdict.Schema) {
		t.Errorf("request outputs = %+v", m.outputs)
	}
	got := structured(rec)
	if len(got) != 1 || got[0]["agent"] != "judge" || got[0]["name"] != "Verdict" || got[0]["output"].(map[string]any)["score"] != 3.0 {
		t.Errorf("structured_output events = %v", got)
	}
}

// An answer that does not satisfy the schema goes back to the model with
// the problem; after Retries it fails the run.
func TestStructuredOutputRetries(t *testing.T) {
	a, _ := agent.New(agent.Config{Name: "judge", Model: scripted(t,
		testmodel.Turn{Text: `{"score": -1}`},
		testmodel.Turn{Text: `{"ok": false}`},
	), Output: verdict})
	res, _, _ := runAgent(t, context.Background(), a, "judge this")
	if res.StopReason != event.StopCompleted || res.Output != `{"ok": false}` {
		t.Fatalf("result = %+v", res)
	}
	retry := res.Messages[2]
	if !retry.Synthetic || !strings.Contains(retry.Text(), `missing required field "ok"`) || !strings.Contains(retry.Text(), `"required":["ok"]`) {
		t.Errorf("retry message = %+v", retry)
	}

	a, _ = agent.New(agent.Config{Name: "judge", Model: scripted(t, testmodel.Turn{Text: "It looks fine."}), Output: verdict})
	res, rec, _ := runAgent(t, context.Background(), a, "judge this")
	if res.StopReason != event.StopError || !errors.Is(res.Err, agent.ErrOutput) || !strings.Contains(res.Err.Error(), "not JSON") {
		t.Fatalf("result = %+v", res)
	}
	if len(structured(rec)) != 0 {
		t.Error("structured_output event for an invalid answer")
	}
	if _, err := agent.New(agent.Config{Name: "x", Model: scripted(t, testmodel.Turn{Text: "x"}), Output: &agent.Output{Schema: json.RawMessage(`[`)}}); err == nil {
		t.Error("a bad schema was accepted")
	}
}
