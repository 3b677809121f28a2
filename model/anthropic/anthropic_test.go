package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/internal/providertest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fake is a Messages API server: it records each request and answers
// with respond(n) (n counts requests from 0).
type fake struct{ *providertest.Server }

func newFake(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *fake {
	t.Helper()
	return &fake{providertest.NewServer(t, "/v1/messages", respond)}
}

func (f *fake) model(t *testing.T, mod func(*Config)) *Model {
	t.Helper()
	return providertest.NewModel(t, New, Config{Model: "claude-test", BaseURL: f.URL, APIKey: "sk-ant-test-key", HTTPClient: f.Client()}, mod)
}

// ev is one server-sent event: `event: <name>` and `data: <json>`.
type ev = providertest.Event

func messageStart(input, cacheRead, cacheWrite int) ev {
	return ev{Name: "message_start", Data: fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-test",`+
		`"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":1}}}`,
		input, cacheWrite, cacheRead)}
}

func blockStart(i int, block string) ev {
	return ev{Name: "content_block_start", Data: fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, block)}
}

func blockDelta(i int, delta string) ev {
	return ev{Name: "content_block_delta", Data: fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, delta)}
}

func blockStop(i int) ev {
	return ev{Name: "content_block_stop", Data: fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)}
}

func messageDelta(stop string, output int) ev {
	return ev{Name: "message_delta", Data: fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, output)}
}

var (
	ping        = ev{Name: "ping", Data: `{"type": "ping"}`}
	messageStop = ev{Name: "message_stop", Data: `{"type":"message_stop"}`}
)

func TestTextDeltasUsageFinish(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w,
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
	providertest.WantStream(t, f.model(t, nil), providertest.Hello(), []model.Chunk{
		{Kind: model.ChunkText, Text: "Hel"},
		{Kind: model.ChunkText, Text: "lo, "},
		{Kind: model.ChunkText, Text: "world."},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 25, OutputTokens: 15}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishStop},
	})
	providertest.JSONEqual(t, "request", f.Body(0), `{"model":"claude-test","max_tokens":4096,"stream":true,
		"messages":[{"role":"user","content":[{"type":"text","text":"Say hello"}]}]}`)
	h := f.Header(0)
	if h.Get("Authorization") != "Bearer sk-ant-test-key" && h.Get("X-Api-Key") != "sk-ant-test-key" {
		t.Fatalf("no key sent: %v", h)
	}
	if h.Get("Anthropic-Version") == "" {
		t.Fatal("no anthropic-version header")
	}
}

func TestTwoToolUseBlocksAndRequestConversion(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w,
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
	req := providertest.ToolConversation()
	providertest.WantStream(t, m, req, []model.Chunk{
		{Kind: model.ChunkText, Text: "Checking both."},
		{Kind: model.ChunkToolCall, Index: 0, ToolCallID: "toolu_01A", ToolName: "get_weather"},
		{Kind: model.ChunkToolCall, Index: 0, ArgsDelta: `{"city": "Par`},
		{Kind: model.ChunkToolCall, Index: 0, ArgsDelta: `is"}`},
		{Kind: model.ChunkToolCall, Index: 1, ToolCallID: "toolu_01B", ToolName: "get_time"},
		{Kind: model.ChunkToolCall, Index: 1, ArgsDelta: `{"tz":"UTC"}`},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 472, OutputTokens: 89, CacheReadTokens: 100, CacheWriteTokens: 20}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls},
	})
	providertest.JSONEqual(t, "request", f.Body(0), `{
		"model":"claude-test","max_tokens":1024,"stream":true,
		"system":[{"type":"text","text":"You are terse."}],
		"messages":[
			{"role":"user","content":[{"type":"text","text":"Weather and time?"}]},
			{"role":"assistant","content":[
				{"type":"text","text":"Checking."},
				{"type":"tool_use","id":"call_1","name":"lookup","input":{"q":"x"}},
				{"type":"tool_use","id":"call_2","name":"noargs","input":{}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"found x"}]},
				{"type":"tool_result","tool_use_id":"call_2","content":[{"type":"text","text":"boom"}],"is_error":true},
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
		providertest.SSE(w,
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
	providertest.WantStream(t, f.model(t, nil), providertest.Hello(), []model.Chunk{
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
			providertest.SSE(w, messageStart(1, 0, 0), messageDelta(stop, 2), messageStop)
		})
		got, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
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
		providertest.SSE(w, messageStart(1, 0, 0),
			blockStart(0, `{"type":"tool_use","id":"t1","name":"a","input":{"x":1}}`), blockStop(0),
			messageDelta("tool_use", 2), messageStop)
	})
	providertest.WantStream(t, f.model(t, nil), providertest.Hello(), []model.Chunk{
		{Kind: model.ChunkToolCall, Index: 0, ToolCallID: "t1", ToolName: "a"},
		{Kind: model.ChunkToolCall, Index: 0, ArgsDelta: `{"x":1}`},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 1, OutputTokens: 2}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls},
	})
}

func TestErrorEventMidStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w,
			messageStart(25, 0, 0),
			blockStart(0, `{"type":"text","text":""}`),
			blockDelta(0, `{"type":"text_delta","text":"Partial"}`),
			ev{Name: "error", Data: `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`})
	})
	got, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{
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
	if f.Requests() != 1 {
		t.Fatalf("a stream that started must not be retried: %d requests", f.Requests())
	}
}

func TestBrokenStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w, messageStart(5, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"Part"}`))
		panic(http.ErrAbortHandler)
	})
	got, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkText, Text: "Part"},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 5, OutputTokens: 1}},
	})
	if err == nil || !strings.HasPrefix(err.Error(), "anthropic: stream broken: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamEndsBeforeMessageStop(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w, messageStart(5, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"Part"}`), blockStop(0), messageDelta("end_turn", 3))
	})
	got, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{
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
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			w.Header().Set("Retry-After", "1")
			errorBody(w, http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
			return
		}
		providertest.SSE(w, messageStart(3, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"ok"}`), blockStop(0), messageDelta("end_turn", 1), messageStop)
	})
	providertest.WantStream(t, f.model(t, nil), providertest.Hello(), []model.Chunk{
		{Kind: model.ChunkText, Text: "ok"},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 3, OutputTokens: 1}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishStop},
	})
	f.WantRetry(t, time.Second) // the 1s of Retry-After
}

func TestOverloadedRetriesExhausted(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "0")
		errorBody(w, 529, "overloaded_error", "Overloaded")
	})
	_, err := providertest.Collect(t, f.model(t, func(c *Config) { c.MaxRetries = 2 }), providertest.Hello())
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
		_, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
		if err == nil || err.Error() != "anthropic: 429 too many requests: slow down" {
			t.Fatalf("Retry-After %s: err = %v", ra, err)
		}
		if f.Requests() != 1 || time.Since(start) > 30*time.Second {
			t.Fatalf("requests %d after %s", f.Requests(), time.Since(start))
		}
	}
}

func TestUnauthorizedNeverShowsKey(t *testing.T) {
	const key = "sk-ant-api03-SECRET-0123456789"
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		errorBody(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key "+key)
	})
	_, err := providertest.Collect(t, f.model(t, func(c *Config) { c.APIKey = key }), providertest.Hello())
	want := "anthropic: 401 unauthorized: invalid x-api-key [redacted] (check the API key: api_key / api_key_env in the manifest or ANTHROPIC_API_KEY)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %q\nwant  %q", err, want)
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), err.(*Error).Message} {
		if strings.Contains(s, key) {
			t.Fatalf("key leaked: %s", s)
		}
	}
	if f.Requests() != 1 {
		t.Fatalf("401 was retried: %d requests", f.Requests())
	}
}

func TestModelNotFound(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		errorBody(w, http.StatusNotFound, "not_found_error", "model: claude-nope")
	})
	_, err := providertest.Collect(t, f.model(t, func(c *Config) { c.Model = "claude-nope" }), providertest.Hello())
	want := `anthropic: 404 not found: model: claude-nope (model "claude-nope" at ` + f.URL + ")"
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
	_, err = providertest.Collect(t, m, providertest.Hello())
	if err == nil || err.Error() != "anthropic: no API key: set ANTHROPIC_API_KEY, or api_key / api_key_env in the manifest" {
		t.Fatalf("err = %v", err)
	}
	m, _ = New(Config{Model: "m", APIKeyEnv: "AGENTPOOL_TEST_UNSET_VARIABLE"})
	if _, err = providertest.Collect(t, m, providertest.Hello()); err == nil || !strings.Contains(err.Error(), "AGENTPOOL_TEST_UNSET_VARIABLE (api_key_env) is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestKeyFromEnvironment(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w, messageStart(1, 0, 0), messageDelta("end_turn", 1), messageStop)
	})
	t.Setenv(EnvAPIKey, "sk-ant-from-env")
	t.Setenv(EnvBaseURL, f.URL)
	m, err := New(Config{Model: "m", HTTPClient: f.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := providertest.Collect(t, m, providertest.Hello()); err != nil {
		t.Fatal(err)
	}
	h := f.Header(0)
	if h.Get("Authorization") != "Bearer sk-ant-from-env" && h.Get("X-Api-Key") != "sk-ant-from-env" {
		t.Fatalf("no key sent: %v", h)
	}
}

func TestCancelStopsStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w, messageStart(1, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"first"}`))
		providertest.Hold(r)
	})
	got, err := providertest.CancelAfterFirst(t, f.model(t, nil), providertest.Hello())
	if len(got) < 1 || got[0] != (model.Chunk{Kind: model.ChunkText, Text: "first"}) {
		t.Fatalf("chunks %+v", got)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestConsumerStopsEarly(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w, messageStart(1, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"a"}`), blockDelta(0, `{"type":"text_delta","text":"b"}`))
		providertest.Hold(r)
	})
	providertest.StopsEarly(t, f.model(t, nil), providertest.Hello())
}

func TestConcurrentStreams(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w, messageStart(1, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"x"}`), blockStop(0), messageDelta("end_turn", 1), messageStop)
	})
	providertest.Concurrently(t, f.model(t, nil), providertest.Hello(), 8, 3)
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
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w, messageStart(2, 0, 0), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"slow"}`))
		providertest.Hold(r)
	})
	got, err := providertest.Collect(t, f.model(t, func(c *Config) { c.Timeout = 300 * time.Millisecond }), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{
		{Kind: model.ChunkText, Text: "slow"},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 2, OutputTokens: 1}},
	})
	if err == nil || err.Error() != "anthropic: request timed out after 300ms (timeout)" {
		t.Fatalf("err = %v", err)
	}
}

// TestBaseURLQueryKept: a base URL with a query (Azure's
// "?api-version=...", a gateway's key) sends that query with every
// request, retries included (request paths are resolved against the
// base URL, which would drop its query).
func TestBaseURLQueryKept(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"error":{"message":"busy"}}`, http.StatusTooManyRequests)
			return
		}
		providertest.SSE(w, messageStart(5, 0, 0), blockStart(0, `{"type":"text","text":""}`),
			blockDelta(0, `{"type":"text_delta","text":"ok"}`), blockStop(0), messageDelta("end_turn", 1), messageStop)
	})
	m := f.model(t, func(c *Config) { c.BaseURL = f.URL + "/?" + "api-version=2024-06-01&tag=a&tag=b%2Fc" })
	for range 2 {
		if _, err := providertest.Collect(t, m, providertest.Hello()); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.Requests(); n != 3 {
		t.Fatalf("requests = %d, want 3 (a retry, then two streams)", n)
	}
	for i := range 3 {
		q := f.Query(i)
		if q.Get("api-version") != "2024-06-01" || fmt.Sprint(q["tag"]) != "[a b/c]" {
			t.Errorf("request %d: query = %v, want api-version=2024-06-01 and tag=[a b/c]", i, q)
		}
	}
}

// TestStreamLineTooLong: a server that sends an event line above 1 MiB
// (and then nothing) ends the stream with a clear error, at once.
func TestStreamLineTooLong(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSE(w, messageStart(4, 0, 0))
		io.WriteString(w, "event: content_block_delta\ndata: "+strings.Repeat("x", 2<<20))
		w.(http.Flusher).Flush()
		providertest.Hold(r)
	})
	got, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 4, OutputTokens: 1}}})
	if err == nil || err.Error() != "anthropic: stream broken: server-sent event longer than 1048576 bytes" {
		t.Fatalf("err = %v", err)
	}
}

// An event with a name but no data, or data but no name, carries nothing
// and is skipped, as are comments.
func TestEventsWithoutDataOrName(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": hi\n\nevent: content_block_delta\ndata:\n\ndata: {\"type\":\"message_stop\"}\n\n")
		providertest.SSE(w, messageStart(1, 0, 0), messageDelta("end_turn", 2), messageStop)
	})
	providertest.WantStream(t, f.model(t, nil), providertest.Hello(), []model.Chunk{
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 1, OutputTokens: 2}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishStop},
	})
}
