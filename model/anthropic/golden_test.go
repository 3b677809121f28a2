package anthropic

import (
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/internal/providertest"
)

// The files under testdata/request were written by the provider built on
// github.com/anthropics/anthropic-sdk-go/v2 (v2.15.0), before it was
// replaced: they are what a Messages request must look like. Rewrite them
// with -update only for a deliberate change of the request.

// goldenCase is one representative request and the model that sends it.
type goldenCase struct {
	name string
	mod  func(c *Config, f *fake)
	req  func() *model.Request
}

func goldenCases() []goldenCase {
	temp := 0.5
	return []goldenCase{
		{name: "plain", req: providertest.Hello},
		{name: "system", req: func() *model.Request {
			r := providertest.Hello()
			r.System = "You are terse.\nAnswer in one line."
			return r
		}},
		// Temperature is accepted but not sent.
		{name: "tools_history", mod: func(c *Config, _ *fake) { c.MaxTokens, c.Temperature = 1024, &temp }, req: providertest.ToolConversation},
		{name: "official_host", mod: func(c *Config, f *fake) {
			c.BaseURL, c.HTTPClient = DefaultBaseURL, f.RedirectClient()
		}, req: providertest.Hello},
		{name: "stop_output", mod: func(c *Config, _ *fake) { c.Stop = []string{"END", "STOP"} }, req: func() *model.Request {
			return &model.Request{
				Messages: []model.Message{model.UserText("judge")},
				Output: &model.OutputSchema{Name: "Verdict", Description: "a verdict",
					Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)},
			}
		}},
		{name: "base_url_query", mod: func(c *Config, f *fake) {
			c.BaseURL = f.URL + "/?api-version=2024-06-01&tag=a&tag=b%2Fc"
		}, req: providertest.Hello},
		{name: "merge_and_odd_args", req: func() *model.Request {
			// Consecutive user messages merge; arguments that are not a
			// JSON object are wrapped; a thinking-only message is dropped.
			return &model.Request{Messages: []model.Message{
				model.UserText("<b>&amp;</b> \"quoted\" \\ tab\t nl\n emoji 😀 \u2028 end"),
				model.UserText("second"),
				{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartThinking, Text: "hmm"}}},
				{Role: model.RoleAssistant, Parts: []model.Part{
					{Kind: model.PartToolCall, ToolCallID: "c1", ToolName: "t", Args: json.RawMessage(`[1,2]`)},
					{Kind: model.PartToolCall, ToolCallID: "c2", ToolName: "t", Args: json.RawMessage(`not json`)},
					{Kind: model.PartToolCall, ToolCallID: "c3", ToolName: "t", Args: json.RawMessage(` {"html": "<a>"} `)},
				}},
				{Role: model.RoleTool, Parts: []model.Part{
					{Kind: model.PartToolResult, ToolCallID: "c1", Text: ""},
					{Kind: model.PartToolResult, ToolCallID: "c2", Text: "<ok> & done"},
					{Kind: model.PartToolResult, ToolCallID: "c3", Text: "x", IsError: true},
				}},
			}, Tools: []model.ToolSpec{{Name: "t", Description: "", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"$defs":{"x":{"type":"string"}},"description":"d"}`)}}}
		}},
	}
}

// goldenRun sends each case's request to a fake server and calls check
// with the recorded request.
func goldenRun(t *testing.T, check func(t *testing.T, name string, f *fake)) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
				providertest.SSE(w, messageStart(1, 0, 0), messageDelta("end_turn", 1), messageStop)
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
			providertest.GoldenStream(t, "/v1/messages", sse, func(s *providertest.Server) model.Model {
				return (&fake{s}).model(t, func(c *Config) { c.MaxRetries = -1 })
			}, func(err error) string {
				var e *Error
				if errors.As(err, &e) {
					return e.Type
				}
				return ""
			})
		})
	}
}
