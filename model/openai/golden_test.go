package openai

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/internal/providertest"
)

// The files under testdata/request were written by the provider built on
// github.com/openai/openai-go/v3 (v3.98.0), before it was replaced: they
// are what a Chat Completions request must look like. Rewrite them with
// -update only for a deliberate change of the request.

// goldenCase is one representative request and the model that sends it.
type goldenCase struct {
	name string
	mod  func(c *Config, f *fake)
	req  func() *model.Request
}

func goldenCases() []goldenCase {
	temp, zero := 0.25, 0.0
	topP, presence, frequency, seed, parallel := 0.9, 0.5, -0.5, int64(42), false
	return []goldenCase{
		{name: "plain", req: providertest.Hello},
		{name: "system", req: func() *model.Request {
			r := providertest.Hello()
			r.System = "You are terse.\nAnswer in one line."
			return r
		}},
		{name: "tools_history", mod: func(c *Config, _ *fake) { c.Temperature, c.MaxTokens = &temp, 256 }, req: providertest.ToolConversation},
		{name: "official_host", mod: func(c *Config, f *fake) {
			// api.openai.com gets max_completion_tokens; a zero
			// temperature is sent.
			c.BaseURL, c.HTTPClient, c.MaxTokens, c.Temperature = DefaultBaseURL, f.RedirectClient(), 100, &zero
		}, req: providertest.Hello},
		{name: "settings_output", mod: func(c *Config, _ *fake) {
			c.TopP, c.PresencePenalty, c.FrequencyPenalty, c.Seed = &topP, &presence, &frequency, &seed
			c.Stop, c.ParallelToolCalls, c.ReasoningEffort = []string{"END", "STOP"}, &parallel, "low"
			c.Headers = map[string]string{"X-Title": "agentpool", "HTTP-Referer": "https://example.test"}
		}, req: func() *model.Request {
			return &model.Request{
				Messages: []model.Message{model.UserText("judge")},
				Output: &model.OutputSchema{Name: "Verdict", Description: "a verdict",
					Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)},
			}
		}},
		{name: "base_url_query", mod: func(c *Config, f *fake) {
			c.BaseURL = f.URL + "/v1?api-version=2024-06-01&tag=a&tag=b%2Fc"
		}, req: providertest.Hello},
		{name: "unicode_and_escapes", req: func() *model.Request {
			return &model.Request{Messages: []model.Message{
				model.UserText("<b>&amp;</b> \"quoted\" \\ tab\t nl\n emoji 😀 \u2028 end"),
				{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartToolCall, ToolCallID: "c1", ToolName: "t", Args: json.RawMessage(" {\"html\": \"<a>\"} ")}}},
				{Role: model.RoleTool, Parts: []model.Part{{Kind: model.PartToolResult, ToolCallID: "c1", ToolName: "t", Text: "<ok> & done"}}},
			}}
		}},
	}
}

// goldenRun sends each case's request to a fake server and calls check
// with the recorded request.
func goldenRun(t *testing.T, check func(t *testing.T, name string, f *fake)) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
				providertest.SSEData(w, chunk(`{"content":"ok"}`, "stop"), "[DONE]")
			})
			m := f.model(t, func(c *Config) {
				if tc.mod != nil {
					tc.mod(c, f)
				}
			})
			if _, err := providertest.Collect(t, m, tc.req()); err != nil {
				t.Fatal(err)
			}
			check(t, tc.name, f)
		})
	}
}

// TestRequestBodyGolden: every representative request has the body the
// SDK sent.
func TestRequestBodyGolden(t *testing.T) {
	goldenRun(t, func(t *testing.T, name string, f *fake) {
		providertest.GoldenJSON(t, filepath.Join("testdata", "request", name+".json"), f.RawBody(0))
	})
}

// headersIgnored are the headers that may differ from the SDK's: its
// X-Stainless-* telemetry and User-Agent, and what the transport sets.
var headersIgnored = []string{"X-Stainless-*", "User-Agent", "Accept-Encoding", "Content-Length"}

// TestRequestHeaders: every representative request has the headers, path
// and query the SDK sent (but for headersIgnored).
func TestRequestHeaders(t *testing.T) {
	goldenRun(t, func(t *testing.T, name string, f *fake) {
		h := f.Header(0).Clone()
		h[":path"] = []string{f.Path(0)}
		providertest.GoldenHeaders(t, filepath.Join("testdata", "request", name+".headers.json"), h, headersIgnored)
	})
}

// TestStreamGolden: each raw event stream under testdata/stream yields
// what the SDK-based provider yielded.
func TestStreamGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "stream", "*.sse"))
	if len(files) == 0 {
		t.Fatal("no streams")
	}
	for _, sse := range files {
		t.Run(strings.TrimSuffix(filepath.Base(sse), ".sse"), func(t *testing.T) {
			providertest.GoldenStream(t, "/v1/chat/completions", sse, func(s *providertest.Server) model.Model {
				return (&fake{s}).model(t, func(c *Config) { c.MaxRetries = -1 })
			}, nil)
		})
	}
}
