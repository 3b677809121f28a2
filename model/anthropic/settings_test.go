package anthropic

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/internal/providertest"
)

// Stop sequences and a structured output (output_config.format) reach the
// Messages request.
func TestStopAndStructuredOutput(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w,
			messageStart(10, 0, 0),
			blockStart(0, `{"type":"text","text":""}`),
			blockDelta(0, `{"type":"text_delta","text":"{\"ok\":true}"}`),
			blockStop(0),
			messageDelta("end_turn", 5),
			messageStop)
	})
	m := f.model(t, func(c *Config) { c.Stop = []string{"END"} })
	req := &model.Request{
		Messages: []model.Message{model.UserText("judge")},
		Output:   &model.OutputSchema{Name: "Verdict", Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)},
	}
	providertest.WantStream(t, m, req, []model.Chunk{
		{Kind: model.ChunkText, Text: `{"ok":true}`},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 10, OutputTokens: 5}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishStop},
	})
	providertest.JSONEqual(t, "request", f.Body(0), `{"model":"claude-test","max_tokens":4096,"stream":true,
		"stop_sequences":["END"],
		"output_config":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}},
		"messages":[{"role":"user","content":[{"type":"text","text":"judge"}]}]}`)
}
