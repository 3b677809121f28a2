package anthropic

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

// fake is a Messages API server: it records each request and answers with
// respond(n) (n counts requests from 0).
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
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
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
	cfg := Config{Model: "claude-test", BaseURL: f.srv.URL, APIKey: "sk-ant-test-key", HTTPClient: f.srv.Client()}
	if mod != nil {
		mod(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ev is one server-sent event: `event: <name>` and `data: <json>`.
type ev struct{ name, data string }

func sse(w http.ResponseWriter, events ...ev) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data)
		w.(http.Flusher).Flush()
	}
}

func messageStart(input, cacheRead, cacheWrite int) ev {
	return ev{"message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-test",`+
		`"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}}}`,
		input, cacheWrite, cacheRead)}
}

func blockStart(i int, block string) ev {
	return ev{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, block)}
}

func blockDelta(i int, delta string) ev {
	return ev{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, delta)}
}

func blockStop(i int) ev {
	return ev{"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)}
}

func messageDelta(stop string, output int) ev {
	return ev{"message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, output)}
}

var (
	ping        = ev{"ping", `{"type": "ping"}`}
	messageStop = ev{"message_stop", `{"type":"message_stop"}`}
)

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
			messageStart(25, 0, 0),
			blockStart(0, `{"type":"text","text":""}`),
			ping,
			blockDelta(0, `{"type":"text_delta","text":"Hel"}`),
			blockDelta(0, `{"type":"text_delta","text":"lo, "}`),
			blockDelta(0, `{"type":"text_delta","text":"world."}`),
			blockStop(0),
			messageDelta("end_turn", 15),
			messageStop)
	})
	got, err := collect(t, f.model(t, nil), hello())
	if err != nil {
		t.Fatal(err)
	}
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkText, Text: "Hel"},
		{Kind: model.ChunkText, Text: "lo, "},
		{Kind: model.ChunkText, Text: "world."},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 25, OutputTokens: 15}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishStop},
	})
	jsonEqual(t, "request", f.body(0), `{"model":"claude-test","max_tokens":4096,"stream":true,
		"messages":[{"role":"user","content":[{"type":"text","text":"Say hello"}]}]}`)
	h := f.header(0)
	if h.Get("Authorization") != "Bearer sk-ant-test-key" && h.Get("X-Api-Key") != "sk-ant-test-key" {
		t.Fatalf("no key sent: %v", h)
	}
	if h.Get("Anthropic-Version") == "" {
		t.Fatal("no anthropic-version header")
	}
}

func TestTwoToolUseBlocksAndRequestConversion(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w,
			messageStart(472, 100, 20),
			blockStart(0, `{"type":"text","text":""}`),
			blockDelta(0, `{"type":"text_delta","text":"Checking both."}`),
			blockStop(0),
			blockStart(1, `{"type":"tool_use","id":"toolu_01A","name":"get_weather","input":{}}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":""}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":"is\"}"}`),
			blockStop(1),
			blockStart(2, `{"type":"tool_use","id":"toolu_01B","name":"get_time","input":{}}`),
			blockDelta(2, `{"type":"input_json_delta","partial_json":"{\"tz\":\"UTC\"}"}`),
			blockStop(2),
			messageDelta("tool_use", 89),
			messageStop)
	})
	temp := 0.5
	m := f.model(t, func(c *Config) { c.MaxTokens = 1024; c.Temperature = &temp })
	req := &model.Request{
		System: "You are terse.",
		Messages: []model.Message{
			model.UserText("Weather and time?"),
			{Role: model.RoleAssistant, Parts: []model.Part{
				{Kind: model.PartThinking, Text: "need tools"},
				{Kind: model.PartText, Text: "Checking."},
				{Kind: model.PartToolCall, ToolCallID: "toolu_1", ToolName: "lookup", Args: json.RawMessage(`{"q":"x"}`)},
				{Kind: model.PartToolCall, ToolCallID: "toolu_2", ToolName: "noargs"},
			}},
			{Role: model.RoleTool, Parts: []model.Part{
				{Kind: model.PartToolResult, ToolCallID: "toolu_1", ToolName: "lookup", Text: "found x"},
				{Kind: model.PartToolResult, ToolCallID: "toolu_2", ToolName: "noargs", Text: "boom", IsError: true},
			}},
			{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: "[async result]"}}, Synthetic: true},
		},
		Tools: []model.ToolSpec{
			{Name: "get_weather", Description: "Weather of a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)},
			{Name: "get_time"},
		},
	}
	got, err := collect(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkText, Text: "Checking both."},
		{Kind: model.ChunkToolCall, Index: 0, ToolCallID: "toolu_01A", ToolName: "get_weather"},
		{Kind: model.ChunkToolCall, Index: 0, ArgsDelta: `{"city": "Par`},
		{Kind: model.ChunkToolCall, Index: 0, ArgsDelta: `is"}`},
		{Kind: model.ChunkToolCall, Index: 1, ToolCallID: "toolu_01B", ToolName: "get_time"},
		{Kind: model.ChunkToolCall, Index: 1, ArgsDelta: `{"tz":"UTC"}`},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 472, OutputTokens: 89, CacheReadTokens: 100, CacheWriteTokens: 20}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls},
	})
	jsonEqual(t, "request", f.body(0), `{
		"model":"claude-test","max_tokens":1024,"stream":true,
		"system":[{"type":"text","text":"You are terse."}],
		"messages":[
			{"role":"user","content":[{"type":"text","text":"Weather and time?"}]},
			{"role":"assistant","content":[
				{"type":"text","text":"Checking."},
				{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"q":"x"}},
				{"type":"tool_use","id":"toolu_2","name":"noargs","input":{}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"found x"}]},
				{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"boom"}],"is_error":true},
				{"type":"text","text":"[async result]"}]}
		],
		"tools":[
			{"name":"get_weather","description":"Weather of a city.",
				"input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},
			{"name":"get_time","input_schema":{"type":"object","properties":{}}}
		]}`)
}

func TestThinking(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w,
			messageStart(10, 0, 0),
			blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
			blockDelta(0, `{"type":"thinking_delta","thinking":"Let me "}`),
			blockDelta(0, `{"type":"thinking_delta","thinking":"think."}`),
			blockDelta(0, `{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}`),
			blockStop(0),
			blockStart(1, `{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}`),
			blockStop(1),
			blockStart(2, `{"type":"text","text":""}`),
			blockDelta(2, `{"type":"text_delta","text":"42."}`),
			blockStop(2),
			messageDelta("max_tokens", 30),
			messageStop)
	})
	got, err := collect(t, f.model(t, nil), hello())
	if err != nil {
		t.Fatal(err)
	}
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkThinking, Text: "Let me "},
		{Kind: model.ChunkThinking, Text: "think."},
		{Kind: model.ChunkText, Text: "42."},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 10, OutputTokens: 30}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishLength},
	})
}

func TestStopReasons(t *testing.T) {
	for stop, want := range map[string]string{
		"end_turn": model.FinishStop, "stop_sequence": model.FinishStop, "tool_use": model.FinishToolCalls,
		"max_tokens": model.FinishLength, "refusal": model.FinishRefusal, "model_context_window_exceeded": model.FinishLength,
	} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
			sse(w, messageStart(1, 0, 0), messageDelta(stop, 2), messageStop)
		})
		got, err := collect(t, f.model(t, nil), hello())
		if err != nil {
			t.Fatal(err)
		}
		if last := got[len(got)-1]; last.Kind != model.ChunkFinish || last.FinishReason != want {
			t.Errorf("%s: got %+v, want %s", stop, last, want)
		}
	}
}

func TestToolInputInBlockStart(t *testing.T) {
	// A server that sends the whole input in content_block_start.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, messageStart(1, 0, 0),
			blockStart(0, `{"type":"tool_use","id":"t1","name":"a","input":{"x":1}}`), blockStop(0),
			messageDelta("tool_use", 2), messageStop)
	})
	got, err := collect(t, f.model(t, nil), hello())
	if err != nil {
		t.Fatal(err)
	}
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkToolCall, Index: 0, ToolCallID: "t1", ToolName: "a"},
		{Kind: model.ChunkToolCall, Index: 0, ArgsDelta: `{"x":1}`},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 1, OutputTokens: 2}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls},
	})
}

func TestErrorEventMidStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w,
			messageStart(25, 0, 0),
			blockStart(0, `{"type":"text","text":""}`),
			blockDelta(0, `{"type":"text_delta","text":"Partial"}`),
			ev{"error", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`})
	})
	got, err := collect(t, f.model(t, nil), hello())
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkText, Text: "Partial"},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 25, OutputTokens: 1}},
	})
	if err == nil || err.Error() != "anthropic: stream error: overloaded_error: Overloaded" {
		t.Fatalf("err = %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Type != "overloaded_error" {
		t.Fatalf("error: %#v", err)
	}
	if f.requests() != 1 {
		t.Fatalf("a stream that started must not be retried: %d requests", f.requests())
	}
}

func TestBrokenStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, messageStart(5, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"Part"}`))
		panic(http.ErrAbortHandler)
	})
	got, err := collect(t, f.model(t, nil), hello())
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkText, Text: "Part"},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 5, OutputTokens: 1}},
	})
	if err == nil || !strings.HasPrefix(err.Error(), "anthropic: stream broken: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamEndsBeforeMessageStop(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, messageStart(5, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"Part"}`), blockStop(0), messageDelta("end_turn", 3))
	})
	got, err := collect(t, f.model(t, nil), hello())
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkText, Text: "Part"},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 5, OutputTokens: 3}},
	})
	if err == nil || err.Error() != "anthropic: stream ended before message_stop" {
		t.Fatalf("err = %v", err)
	}
}

func errorBody(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_011")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_011"}`, typ, msg)
}

func TestRetryAfter429ThenSuccess(t *testing.T) {
	var first, gap atomic.Int64
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			first.Store(time.Now().UnixNano())
			w.Header().Set("Retry-After", "1")
			errorBody(w, http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
			return
		}
		gap.Store(time.Now().UnixNano() - first.Load())
		sse(w, messageStart(3, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"ok"}`), blockStop(0), messageDelta("end_turn", 1), messageStop)
	})
	got, err := collect(t, f.model(t, nil), hello())
	if err != nil {
		t.Fatal(err)
	}
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkText, Text: "ok"},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 3, OutputTokens: 1}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishStop},
	})
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

func TestOverloadedRetriesExhausted(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "0")
		errorBody(w, 529, "overloaded_error", "Overloaded")
	})
	_, err := collect(t, f.model(t, func(c *Config) { c.MaxRetries = 2 }), hello())
	want := "anthropic: 529 overloaded: Overloaded (gave up after 3 attempts)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 529 || e.Type != "overloaded_error" || e.Attempts != 3 {
		t.Fatalf("error fields: %+v", e)
	}
}

func TestRetryAfterTooLongIsNotWaited(t *testing.T) {
	for _, ra := range []string{"3600", time.Now().Add(2 * time.Hour).UTC().Format(http.TimeFormat)} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Retry-After", ra)
			errorBody(w, http.StatusTooManyRequests, "rate_limit_error", "slow down")
		})
		start := time.Now()
		_, err := collect(t, f.model(t, nil), hello())
		if err == nil || err.Error() != "anthropic: 429 too many requests: slow down" {
			t.Fatalf("Retry-After %s: err = %v", ra, err)
		}
		if f.requests() != 1 || time.Since(start) > 30*time.Second {
			t.Fatalf("requests %d after %s", f.requests(), time.Since(start))
		}
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, true},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{}, 0, false},
	} {
		got, ok := retryAfter(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v: got %s %v, want %s %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func TestUnauthorizedNeverShowsKey(t *testing.T) {
	const key = "sk-ant-api03-SECRET-0123456789"
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		errorBody(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key "+key)
	})
	_, err := collect(t, f.model(t, func(c *Config) { c.APIKey = key }), hello())
	want := "anthropic: 401 unauthorized: invalid x-api-key [redacted] (check the API key: api_key / api_key_env in the manifest or ANTHROPIC_API_KEY)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %q\nwant  %q", err, want)
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), err.(*Error).Message} {
		if strings.Contains(s, key) {
			t.Fatalf("key leaked: %s", s)
		}
	}
	if f.requests() != 1 {
		t.Fatalf("401 was retried: %d requests", f.requests())
	}
}

func TestModelNotFound(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		errorBody(w, http.StatusNotFound, "not_found_error", "model: claude-nope")
	})
	_, err := collect(t, f.model(t, func(c *Config) { c.Model = "claude-nope" }), hello())
	want := `anthropic: 404 not found: model: claude-nope (model "claude-nope" at ` + f.srv.URL + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

func TestMissingKey(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, "")
	m, err := New(Config{Model: "claude-3-5-haiku-latest"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collect(t, m, hello())
	if err == nil || err.Error() != "anthropic: no API key: set ANTHROPIC_API_KEY, or api_key / api_key_env in the manifest" {
		t.Fatalf("err = %v", err)
	}
	m, _ = New(Config{Model: "m", APIKeyEnv: "AGENTPOOL_TEST_UNSET_VARIABLE"})
	if _, err = collect(t, m, hello()); err == nil || !strings.Contains(err.Error(), "AGENTPOOL_TEST_UNSET_VARIABLE (api_key_env) is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestKeyFromEnvironment(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, messageStart(1, 0, 0), messageDelta("end_turn", 1), messageStop)
	})
	t.Setenv(EnvAPIKey, "sk-ant-from-env")
	t.Setenv(EnvBaseURL, f.srv.URL)
	m, err := New(Config{Model: "m", HTTPClient: f.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(t, m, hello()); err != nil {
		t.Fatal(err)
	}
	h := f.header(0)
	if h.Get("Authorization") != "Bearer sk-ant-from-env" && h.Get("X-Api-Key") != "sk-ant-from-env" {
		t.Fatalf("no key sent: %v", h)
	}
}

func TestCancelStopsStream(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, messageStart(1, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"first"}`))
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
		if c.Kind == model.ChunkText {
			cancel()
		}
	}
	if len(got) < 1 || got[0] != (model.Chunk{Kind: model.ChunkText, Text: "first"}) {
		t.Fatalf("chunks %+v", got)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestConsumerStopsEarly(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, messageStart(1, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"a"}`), blockDelta(0, `{"type":"text_delta","text":"b"}`))
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
		sse(w, messageStart(1, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"x"}`), blockStop(0), messageDelta("end_turn", 1), messageStop)
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
	if _, err := New(Config{Model: "m", BaseURL: "api.anthropic.com"}); err == nil || !strings.Contains(err.Error(), "invalid base URL") {
		t.Fatalf("err = %v", err)
	}
	m, err := New(Config{Model: "m", APIKey: "k", InputPrice: 3, OutputPrice: 15})
	if err != nil {
		t.Fatal(err)
	}
	if got := model.Cost(m, event.Usage{InputTokens: 2000, OutputTokens: 300}); got != (2000*3+300*15)/1e6 {
		t.Fatalf("cost %v", got)
	}
}

func TestTimeoutMidStream(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sse(w, messageStart(2, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"slow"}`))
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	got, err := collect(t, f.model(t, func(c *Config) { c.Timeout = 300 * time.Millisecond }), hello())
	wantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkText, Text: "slow"},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 2, OutputTokens: 1}},
	})
	if err == nil || err.Error() != "anthropic: request timed out after 300ms (timeout)" {
		t.Fatalf("err = %v", err)
	}
}
