package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fake is an OpenAI-compatible server: it records each request and answers
// with respond(n) (n counts requests from 0).
type fake struct {
	srv     *httptest.Server
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
}

func newFake(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *fake {
	t.Helper()
	f := &fake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		n := len(f.bodies)
		f.bodies = append(f.bodies, body)
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		respond(w, r, n)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

func (f *fake) body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

func (f *fake) header(i int) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[i]
}

func (f *fake) model(t *testing.T, mod func(*Config)) *Model {
	t.Helper()
	cfg := Config{Model: "gpt-test", BaseURL: f.srv.URL + "/v1", APIKey: "sk-test-key", HTTPClient: f.srv.Client()}
	if mod != nil {
		mod(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sse writes frames as server-sent events, each `data: <frame>`.
func sse(w http.ResponseWriter, frames ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, f := range frames {
		fmt.Fprintf(w, "data: %s\n\n", f)
		w.(http.Flusher).Flush()
	}
}

// chunk is one chat.completion.chunk with one choice.
func chunk(delta, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","system_fingerprint":"fp_1",` +
		`"choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + fr + `}],"usage":null}`
}

func usageChunk(prompt, completion, cached, reasoning int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d,"audio_tokens":0},`+
		`"completion_tokens_details":{"reasoning_tokens":%d,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
		prompt, completion, prompt+completion, cached, reasoning)
}

// collect runs a stream to its end.
func collect(t *testing.T, m *Model, req *model.Request) ([]model.Chunk, error) {
	t.Helper()
	var out []model.Chunk
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

func wantChunks(t *testing.T, got, want []model.Chunk) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("chunks:\n got %+v\nwant %+v", got, want)
	}
}

func jsonEqual(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON for %s: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Fatalf("%s:\n got %s\nwant %s", what, g, want)
	}
}

func hello() *model.Request {
	return &model.Request{Messages: []model.Message{model.UserText("Say hello")}}
}

func TestTextDeltasUsageFinish(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w,
			chunk(`{"role":"assistant","content":"","refusal":null}`, ""),
			chunk(`{"content":"Hel"}`, ""),
			chunk(`{"content":"lo, "}`, ""),
			chunk(`{"content":"world."}`, ""),
			chunk(`{}`, "stop"),
			usageChunk(12, 5, 4, 2),
			"[DONE]")
	})
	got, err := collect(t, f.model(t, nil), hello())
	if err != nil {
		t.Fatal(err)
	}
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkText, Text: "Hel"},
		{Kind: model.ChunkText, Text: "lo, "},
		{Kind: model.ChunkText, Text: "world."},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 12, OutputTokens: 5, CacheReadTokens: 4, ReasoningTokens: 2}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishStop},
	})
	b := f.body(0)
	jsonEqual(t, "request", b, `{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},
		"messages":[{"role":"user","content":"Say hello"}]}`)
	if h := f.header(0).Get("Authorization"); h != "Bearer sk-test-key" {
		t.Fatalf("Authorization = %q", h)
	}
}

func TestToolCallsInterleavedAndRequestConversion(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w,
			chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\":\"UTC\"}"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
			usageChunk(40, 18, 0, 0),
			"[DONE]")
	})
	temp := 0.25
	m := f.model(t, func(c *Config) { c.Temperature = &temp; c.MaxTokens = 256 })
	req := &model.Request{
		System: "You are terse.",
		Messages: []model.Message{
			model.UserText("Weather and time?"),
			{Role: model.RoleAssistant, Parts: []model.Part{
				{Kind: model.PartThinking, Text: "need tools"},
				{Kind: model.PartText, Text: "Checking."},
				{Kind: model.PartToolCall, ToolCallID: "call_1", ToolName: "lookup", Args: json.RawMessage(`{"q":"x"}`)},
				{Kind: model.PartToolCall, ToolCallID: "call_2", ToolName: "noargs"},
			}},
			{Role: model.RoleTool, Parts: []model.Part{
				{Kind: model.PartToolResult, ToolCallID: "call_1", ToolName: "lookup", Text: "found x"},
				{Kind: model.PartToolResult, ToolCallID: "call_2", ToolName: "noargs", Text: "boom", IsError: true},
			}},
			{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: "[async result]"}}, Synthetic: true},
		},
		Tools: []model.ToolSpec{
			{Name: "get_weather", Description: "Weather of a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_time", Parameters: nil},
		},
	}
	got, err := collect(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkToolCall, Index: 0, ToolCallID: "call_a", ToolName: "get_weather"},
		{Kind: model.ChunkToolCall, Index: 0, ArgsDelta: `{"city":`},
		{Kind: model.ChunkToolCall, Index: 1, ToolCallID: "call_b", ToolName: "get_time"},
		{Kind: model.ChunkToolCall, Index: 1, ArgsDelta: `{"tz":"UTC"}`},
		{Kind: model.ChunkToolCall, Index: 0, ArgsDelta: `"Paris"}`},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 40, OutputTokens: 18}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls},
	})
	jsonEqual(t, "request", f.body(0), `{
		"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},
		"temperature":0.25,"max_tokens":256,
		"messages":[
			{"role":"system","content":"You are terse."},
			{"role":"user","content":"Weather and time?"},
			{"role":"assistant","content":"Checking.","tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"x\"}"}},
				{"id":"call_2","type":"function","function":{"name":"noargs","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"found x"},
			{"role":"tool","tool_call_id":"call_2","content":"boom"},
			{"role":"user","content":"[async result]"}
		],
		"tools":[
			{"type":"function","function":{"name":"get_weather","description":"Weather of a city.",
				"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
			{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}
		]}`)
}

func TestToolCallsAtOneIndexAndStopFinish(t *testing.T) {
	// Some local servers send every complete call at index 0 and end with
	// "stop": each new id is a new call, and the finish is tool_calls.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w,
			chunk(`{"role":"assistant","content":"","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"c2","type":"function","function":{"name":"b","arguments":"{\"x\":1}"}}]}`, ""),
			chunk(`{}`, "stop"),
			"[DONE]")
	})
	got, err := collect(t, f.model(t, nil), hello())
	if err != nil {
		t.Fatal(err)
	}
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkToolCall, Index: 0, ToolCallID: "c1", ToolName: "a", ArgsDelta: "{}"},
		{Kind: model.ChunkToolCall, Index: 1, ToolCallID: "c2", ToolName: "b", ArgsDelta: `{"x":1}`},
		{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls},
	})
}

func TestReasoningFields(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w,
			// llama.cpp / vLLM / DeepSeek
			chunk(`{"role":"assistant","content":null,"reasoning_content":"Let me "}`, ""),
			chunk(`{"content":null,"reasoning_content":"think."}`, ""),
			// Ollama / OpenRouter
			chunk(`{"content":"","reasoning":" More."}`, ""),
			chunk(`{"content":"Answer.","reasoning_content":null}`, ""),
			chunk(`{}`, "length"),
			usageChunk(3, 9, 0, 6),
			"[DONE]")
	})
	got, err := collect(t, f.model(t, nil), hello())
	if err != nil {
		t.Fatal(err)
	}
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkThinking, Text: "Let me "},
		{Kind: model.ChunkThinking, Text: "think."},
		{Kind: model.ChunkThinking, Text: " More."},
		{Kind: model.ChunkText, Text: "Answer."},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 3, OutputTokens: 9, ReasoningTokens: 6}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishLength},
	})
}

func TestRefusalAndContentFilter(t *testing.T) {
	for _, tc := range []struct{ delta, finish string }{
		{`{"role":"assistant","content":null,"refusal":"I can't help."}`, "stop"},
		{`{"role":"assistant","content":"I can't help."}`, "content_filter"},
	} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
			sse(w, chunk(tc.delta, ""), chunk(`{}`, tc.finish), "[DONE]")
		})
		got, err := collect(t, f.model(t, nil), hello())
		if err != nil {
			t.Fatal(err)
		}
		wantChunks(t, got, []model.Chunk{
			{Kind: model.ChunkText, Text: "I can't help."},
			{Kind: model.ChunkFinish, FinishReason: model.FinishRefusal},
		})
	}
}

func TestErrorEventMidStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w,
			chunk(`{"role":"assistant","content":"Partial"}`, ""),
			`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
	})
	got, err := collect(t, f.model(t, nil), hello())
	wantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "Partial"}})
	if err == nil || err.Error() != "openai: stream error: The server had an error while processing your request." {
		t.Fatalf("err = %v", err)
	}
	if f.requests() != 1 {
		t.Fatalf("a stream that started must not be retried: %d requests", f.requests())
	}
}

func TestBrokenStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, chunk(`{"role":"assistant","content":"Part"}`, ""))
		panic(http.ErrAbortHandler) // drops the connection mid-body
	})
	got, err := collect(t, f.model(t, nil), hello())
	wantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "Part"}})
	var e *Error
	if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), "openai: stream broken: ") {
		t.Fatalf("err = %v", err)
	}
	if f.requests() != 1 {
		t.Fatalf("%d requests", f.requests())
	}
}

func TestStreamEndsWithoutFinish(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, chunk(`{"role":"assistant","content":"Part"}`, "")) // then a clean end of body
	})
	got, err := collect(t, f.model(t, nil), hello())
	wantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "Part"}})
	if err == nil || err.Error() != "openai: stream ended before the response was complete (no finish_reason)" {
		t.Fatalf("err = %v", err)
	}
}

func TestRetryAfter429ThenSuccess(t *testing.T) {
	var first atomic.Int64 // unix nanoseconds of the first request
	var gap atomic.Int64   // nanoseconds between the two requests
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			first.Store(time.Now().UnixNano())
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		gap.Store(time.Now().UnixNano() - first.Load())
		sse(w, chunk(`{"role":"assistant","content":"ok"}`, ""), chunk(`{}`, "stop"), "[DONE]")
	})
	got, err := collect(t, f.model(t, nil), hello())
	if err != nil {
		t.Fatal(err)
	}
	wantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "ok"}, {Kind: model.ChunkFinish, FinishReason: model.FinishStop}})
	if f.requests() != 2 {
		t.Fatalf("requests = %d, want 2", f.requests())
	}
	if d := time.Duration(gap.Load()); d < time.Second {
		t.Fatalf("retried after %s, want at least the 1s of Retry-After", d)
	}
	if !reflect.DeepEqual(f.body(0), f.body(1)) {
		t.Fatal("the retry sent a different body")
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	var first atomic.Int64 // unix nanoseconds of the first request
	var gap atomic.Int64   // nanoseconds between the two requests
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			first.Store(time.Now().UnixNano())
			// An HTTP date 2s ahead (1s resolution: at least ~1s from now).
			w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		gap.Store(time.Now().UnixNano() - first.Load())
		sse(w, chunk(`{"content":"ok"}`, "stop"), "[DONE]")
	})
	if _, err := collect(t, f.model(t, nil), hello()); err != nil {
		t.Fatal(err)
	}
	if d := time.Duration(gap.Load()); f.requests() != 2 || d < time.Second {
		t.Fatalf("requests %d, gap %s", f.requests(), d)
	}
}

func TestServerErrorRetriesExhausted(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, `{"error":{"message":"upstream unavailable"}}`)
	})
	_, err := collect(t, f.model(t, func(c *Config) { c.MaxRetries = 2 }), hello())
	want := "openai: 502 bad gateway: upstream unavailable (gave up after 3 attempts)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 502 || e.Attempts != 3 || e.Message != "upstream unavailable" {
		t.Fatalf("error fields: %+v", e)
	}
	if f.requests() != 3 {
		t.Fatalf("requests = %d", f.requests())
	}
}

func TestRetryAfterTooLongIsNotWaited(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"quota exceeded"}}`)
	})
	start := time.Now()
	_, err := collect(t, f.model(t, nil), hello())
	if err == nil || err.Error() != "openai: 429 too many requests: quota exceeded" {
		t.Fatalf("err = %v", err)
	}
	if f.requests() != 1 || time.Since(start) > 30*time.Second {
		t.Fatalf("requests %d after %s", f.requests(), time.Since(start))
	}
}

func TestUnauthorizedNeverShowsKey(t *testing.T) {
	const key = "sk-proj-SECRET-0123456789abcdef"
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		// A server that echoes the key it was sent.
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+key+`.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
	})
	_, err := collect(t, f.model(t, func(c *Config) { c.APIKey = key }), hello())
	if err == nil {
		t.Fatal("no error")
	}
	want := "openai: 401 unauthorized: Incorrect API key provided: [redacted]. (check the API key: api_key / api_key_env in the manifest or OPENAI_API_KEY)"
	if err.Error() != want {
		t.Fatalf("err = %q\nwant  %q", err, want)
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err.(*Error).Message)} {
		if strings.Contains(s, key) {
			t.Fatalf("key leaked: %s", s)
		}
	}
	if f.requests() != 1 {
		t.Fatalf("401 was retried: %d requests", f.requests())
	}
	if h := f.header(0).Get("Authorization"); h != "Bearer "+key {
		t.Fatalf("Authorization = %q", h)
	}
}

func TestModelNotFound(t *testing.T) {
	for name, body := range map[string]string{
		"openai": `{"error":{"message":"The model ` + "`gpt-nope`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}`,
		"ollama": `{"error":"model \"gpt-nope\" not found, try pulling it first"}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, body)
			})
			_, err := collect(t, f.model(t, func(c *Config) { c.Model = "gpt-nope" }), hello())
			if err == nil || !strings.HasPrefix(err.Error(), "openai: 404 not found: ") ||
				!strings.Contains(err.Error(), "gpt-nope") || !strings.HasSuffix(err.Error(), `(model "gpt-nope" at `+f.srv.URL+"/v1)") {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestMissingKey(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, "")
	m, err := New(Config{Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, m, hello())
	if err == nil || err.Error() != "openai: no API key: set OPENAI_API_KEY, or api_key / api_key_env in the manifest" {
		t.Fatalf("err = %v", err)
	}
	m, _ = New(Config{Model: "gpt-4o-mini", APIKeyEnv: "AGENTPOOL_TEST_UNSET_VARIABLE"})
	_, err = collect(t, m, hello())
	if err == nil || !strings.Contains(err.Error(), "AGENTPOOL_TEST_UNSET_VARIABLE (api_key_env) is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestEnvironmentAndLocalServerWithoutKey(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, chunk(`{"content":"hi"}`, "stop"), "[DONE]")
	})
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, f.srv.URL+"/v1")
	m, err := New(Config{Model: "llama3.2", HTTPClient: f.srv.Client(), MaxTokens: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(t, m, hello()); err != nil {
		t.Fatal(err)
	}
	if h := f.header(0).Get("Authorization"); h != "" {
		t.Fatalf("Authorization sent without a key: %q", h)
	}
	if b := f.body(0); b["max_tokens"] != 7.0 || b["max_completion_tokens"] != nil {
		t.Fatalf("a local server gets max_tokens: %v", b)
	}

	t.Setenv("AGENTPOOL_TEST_KEY", "sk-from-env")
	m, _ = New(Config{Model: "llama3.2", HTTPClient: f.srv.Client(), APIKeyEnv: "AGENTPOOL_TEST_KEY"})
	if _, err := collect(t, m, hello()); err != nil {
		t.Fatal(err)
	}
	if h := f.header(1).Get("Authorization"); h != "Bearer sk-from-env" {
		t.Fatalf("Authorization = %q", h)
	}
}

func TestCancelStopsStream(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, chunk(`{"content":"first"}`, ""))
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []model.Chunk
	var err error
	for c, e := range f.model(t, nil).Stream(ctx, hello()) {
		if e != nil {
			err = e
			break
		}
		got = append(got, c)
		cancel()
	}
	wantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "first"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestConsumerStopsEarly(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, chunk(`{"content":"a"}`, ""), chunk(`{"content":"b"}`, ""))
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	n := 0
	for range f.model(t, nil).Stream(context.Background(), hello()) {
		n++
		break
	}
	if n != 1 {
		t.Fatal(n)
	}
}

func TestConcurrentStreams(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, chunk(`{"content":"x"}`, "stop"), usageChunk(1, 1, 0, 0), "[DONE]")
	})
	m := f.model(t, nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			got, err := collect(t, m, hello())
			if err != nil || len(got) != 3 {
				t.Errorf("got %v, %v", got, err)
			}
		})
	}
	wg.Wait()
}

func TestNewErrorsAndPrice(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("no error for a missing model id")
	}
	if _, err := New(Config{Model: "m", BaseURL: "localhost:11434"}); err == nil || !strings.Contains(err.Error(), "invalid base URL") {
		t.Fatalf("err = %v", err)
	}
	m, err := New(Config{Model: "m", BaseURL: "http://127.0.0.1:1/v1", InputPrice: 2.5, OutputPrice: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := model.Cost(m, event.Usage{InputTokens: 1000, OutputTokens: 100}); got != (1000*2.5+100*10)/1e6 {
		t.Fatalf("cost %v", got)
	}
	if m.ID() != "m" {
		t.Fatal(m.ID())
	}
}

func TestBadToolSchema(t *testing.T) {
	m, _ := New(Config{Model: "m", BaseURL: "http://127.0.0.1:1/v1"})
	_, err := collect(t, m, &model.Request{Messages: hello().Messages, Tools: []model.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}})
	if err == nil || !strings.Contains(err.Error(), "tool t: parameters are not a JSON schema object") {
		t.Fatalf("err = %v", err)
	}
}

func TestTimeoutMidStream(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, chunk(`{"content":"slow"}`, ""))
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	got, err := collect(t, f.model(t, func(c *Config) { c.Timeout = 300 * time.Millisecond }), hello())
	wantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "slow"}})
	if err == nil || err.Error() != "openai: request timed out after 300ms (timeout)" {
		t.Fatalf("err = %v", err)
	}
}
