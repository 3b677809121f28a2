package openai

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/internal/providertest"
)

// AgentPool's model settings and a structured output reach the request:
// the sampling settings as Chat Completions fields, the output as a
// json_schema response_format, extra headers on the request.
func TestSettingsAndStructuredOutput(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w, chunk(`{"content":"{\"ok\":true}"}`, "stop"), "[DONE]")
	})
	topP, presence, frequency, seed, parallel := 0.9, 0.5, -0.5, int64(42), false
	m := f.model(t, func(c *Config) {
		c.TopP, c.PresencePenalty, c.FrequencyPenalty, c.Seed = &topP, &presence, &frequency, &seed
		c.Stop, c.ParallelToolCalls, c.ReasoningEffort = []string{"END"}, &parallel, "low"
		c.Headers = map[string]string{"X-Title": "agentpool"}
	})
	req := &model.Request{
		Messages: []model.Message{model.UserText("judge")},
		Output:   &model.OutputSchema{Name: "Verdict", Description: "a verdict", Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)},
	}
	providertest.WantStream(t, m, req, []model.Chunk{
		{Kind: model.ChunkText, Text: `{"ok":true}`},
		{Kind: model.ChunkFinish, FinishReason: model.FinishStop},
	})
	providertest.JSONEqual(t, "request", f.Body(0), `{
		"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},
		"top_p":0.9,"presence_penalty":0.5,"frequency_penalty":-0.5,"seed":42,
		"stop":["END"],"parallel_tool_calls":false,"reasoning_effort":"low",
		"response_format":{"type":"json_schema","json_schema":{"name":"Verdict","description":"a verdict",
			"schema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}},
		"messages":[{"role":"user","content":"judge"}]}`)
	if got := f.Header(0).Get("X-Title"); got != "agentpool" {
		t.Errorf("X-Title = %q", got)
	}
}

// The configured headers come last: a gateway that wants its own
// Authorization (or User-Agent) gets it instead of the default.
func TestHeadersReplaceDefaults(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w, chunk(`{"content":"ok"}`, "stop"), "[DONE]")
	})
	m := f.model(t, func(c *Config) {
		c.Headers = map[string]string{"authorization": "Token gw-1", "User-Agent": "mine/1"}
	})
	if _, err := providertest.Collect(t, m, providertest.Hello()); err != nil {
		t.Fatal(err)
	}
	h := f.Header(0)
	if h.Get("Authorization") != "Token gw-1" || h.Get("User-Agent") != "mine/1" || len(h.Values("Authorization")) != 1 {
		t.Fatalf("headers %v", h)
	}
}
