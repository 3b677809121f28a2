package openai

import (
	"context"
	"encoding/json"
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

// fake is an OpenAI-compatible server: it records each request and answers
// with respond(n) (n counts requests from 0).
type fake struct{ *providertest.Server }

func newFake(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *fake {
	t.Helper()
	return &fake{providertest.NewServer(t, "/v1/chat/completions", respond)}
}

func (f *fake) model(t *testing.T, mod func(*Config)) *Model {
	t.Helper()
	return providertest.NewModel(t, New, Config{Model: "gpt-test", BaseURL: f.URL + "/v1", APIKey: "sk-test-key", HTTPClient: f.Client()}, mod)
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

func TestTextDeltasUsageFinish(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w,
			chunk(`{"role":"assistant","content":"","refusal":null}`, ""),
			chunk(`{"content":"Hel"}`, ""),
			chunk(`{"content":"lo, "}`, ""),
			chunk(`{"content":"world."}`, ""),
			chunk(`{}`, "stop"),
			usageChunk(12, 5, 4, 2),
			"[DONE]")
	})
	providertest.WantStream(t, f.model(t, nil), providertest.Hello(), []model.Chunk{
		{Kind: model.ChunkText, Text: "Hel"},
		{Kind: model.ChunkText, Text: "lo, "},
		{Kind: model.ChunkText, Text: "world."},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 12, OutputTokens: 5, CacheReadTokens: 4, ReasoningTokens: 2}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishStop},
	})
	b := f.Body(0)
	providertest.JSONEqual(t, "request", b, `{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},
		"messages":[{"role":"user","content":"Say hello"}]}`)
	if h := f.Header(0).Get("Authorization"); h != "Bearer sk-test-key" {
		t.Fatalf("Authorization = %q", h)
	}
}

func TestToolCallsInterleavedAndRequestConversion(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w,
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
	req := providertest.ToolConversation()
	providertest.WantStream(t, m, req, []model.Chunk{
		{Kind: model.ChunkToolCall, Index: 0, ToolCallID: "call_a", ToolName: "get_weather"},
		{Kind: model.ChunkToolCall, Index: 0, ArgsDelta: `{"city":`},
		{Kind: model.ChunkToolCall, Index: 1, ToolCallID: "call_b", ToolName: "get_time"},
		{Kind: model.ChunkToolCall, Index: 1, ArgsDelta: `{"tz":"UTC"}`},
		{Kind: model.ChunkToolCall, Index: 0, ArgsDelta: `"Paris"}`},
		{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 40, OutputTokens: 18}},
		{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls},
	})
	providertest.JSONEqual(t, "request", f.Body(0), `{
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
				"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}},
			{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}
		]}`)
}

func TestToolCallsAtOneIndexAndStopFinish(t *testing.T) {
	// Some local servers send every complete call at index 0 and end with
	// "stop": each new id is a new call, and the finish is tool_calls.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w,
			chunk(`{"role":"assistant","content":"","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"a","arguments":"{}"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"c2","type":"function","function":{"name":"b","arguments":"{\"x\":1}"}}]}`, ""),
			chunk(`{}`, "stop"),
			"[DONE]")
	})
	providertest.WantStream(t, f.model(t, nil), providertest.Hello(), []model.Chunk{
		{Kind: model.ChunkToolCall, Index: 0, ToolCallID: "c1", ToolName: "a", ArgsDelta: "{}"},
		{Kind: model.ChunkToolCall, Index: 1, ToolCallID: "c2", ToolName: "b", ArgsDelta: `{"x":1}`},
		{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls},
	})
}

func TestReasoningFields(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w,
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
	providertest.WantStream(t, f.model(t, nil), providertest.Hello(), []model.Chunk{
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
			providertest.SSEData(w, chunk(tc.delta, ""), chunk(`{}`, tc.finish), "[DONE]")
		})
		providertest.WantStream(t, f.model(t, nil), providertest.Hello(), []model.Chunk{
			{Kind: model.ChunkText, Text: "I can't help."},
			{Kind: model.ChunkFinish, FinishReason: model.FinishRefusal},
		})
	}
}

func TestErrorEventMidStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w,
			chunk(`{"role":"assistant","content":"Partial"}`, ""),
			`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
	})
	got, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "Partial"}})
	if err == nil || err.Error() != "openai: stream error: The server had an error while processing your request." {
		t.Fatalf("err = %v", err)
	}
	if f.Requests() != 1 {
		t.Fatalf("a stream that started must not be retried: %d requests", f.Requests())
	}
}

func TestBrokenStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w, chunk(`{"role":"assistant","content":"Part"}`, ""))
		panic(http.ErrAbortHandler) // drops the connection mid-body
	})
	got, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "Part"}})
	var e *Error
	if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), "openai: stream broken: ") {
		t.Fatalf("err = %v", err)
	}
	if f.Requests() != 1 {
		t.Fatalf("%d requests", f.Requests())
	}
}

func TestStreamEndsWithoutFinish(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w, chunk(`{"role":"assistant","content":"Part"}`, "")) // then a clean end of body
	})
	got, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "Part"}})
	if err == nil || err.Error() != "openai: stream ended before the response was complete (no finish_reason)" {
		t.Fatalf("err = %v", err)
	}
}

func TestRetryAfter429ThenSuccess(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		providertest.SSEData(w, chunk(`{"role":"assistant","content":"ok"}`, ""), chunk(`{}`, "stop"), "[DONE]")
	})
	providertest.WantStream(t, f.model(t, nil), providertest.Hello(), []model.Chunk{{Kind: model.ChunkText, Text: "ok"}, {Kind: model.ChunkFinish, FinishReason: model.FinishStop}})
	f.WantRetry(t, time.Second) // the 1s of Retry-After
}

func TestRetryAfterHTTPDate(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			// An HTTP date 2s ahead (1s resolution: at least ~1s from now).
			w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		providertest.SSEData(w, chunk(`{"content":"ok"}`, "stop"), "[DONE]")
	})
	if _, err := providertest.Collect(t, f.model(t, nil), providertest.Hello()); err != nil {
		t.Fatal(err)
	}
	f.WantRetry(t, time.Second)
}

func TestServerErrorRetriesExhausted(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, `{"error":{"message":"upstream unavailable"}}`)
	})
	_, err := providertest.Collect(t, f.model(t, func(c *Config) { c.MaxRetries = 2 }), providertest.Hello())
	want := "openai: 502 bad gateway: upstream unavailable (gave up after 3 attempts)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.StatusCode != 502 || e.Attempts != 3 || e.Message != "upstream unavailable" {
		t.Fatalf("error fields: %+v", e)
	}
	if f.Requests() != 3 {
		t.Fatalf("requests = %d", f.Requests())
	}
}

func TestRetryAfterTooLongIsNotWaited(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"quota exceeded"}}`)
	})
	start := time.Now()
	_, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
	if err == nil || err.Error() != "openai: 429 too many requests: quota exceeded" {
		t.Fatalf("err = %v", err)
	}
	if f.Requests() != 1 || time.Since(start) > 30*time.Second {
		t.Fatalf("requests %d after %s", f.Requests(), time.Since(start))
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
	_, err := providertest.Collect(t, f.model(t, func(c *Config) { c.APIKey = key }), providertest.Hello())
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
	if f.Requests() != 1 {
		t.Fatalf("401 was retried: %d requests", f.Requests())
	}
	if h := f.Header(0).Get("Authorization"); h != "Bearer "+key {
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
			_, err := providertest.Collect(t, f.model(t, func(c *Config) { c.Model = "gpt-nope" }), providertest.Hello())
			if err == nil || !strings.HasPrefix(err.Error(), "openai: 404 not found: ") ||
				!strings.Contains(err.Error(), "gpt-nope") || !strings.HasSuffix(err.Error(), `(model "gpt-nope" at `+f.URL+"/v1)") {
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
	_, err = providertest.Collect(t, m, providertest.Hello())
	if err == nil || err.Error() != "openai: no API key: set OPENAI_API_KEY, or api_key / api_key_env in the manifest" {
		t.Fatalf("err = %v", err)
	}
	m, _ = New(Config{Model: "gpt-4o-mini", APIKeyEnv: "AGENTPOOL_TEST_UNSET_VARIABLE"})
	_, err = providertest.Collect(t, m, providertest.Hello())
	if err == nil || !strings.Contains(err.Error(), "AGENTPOOL_TEST_UNSET_VARIABLE (api_key_env) is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestEnvironmentAndLocalServerWithoutKey(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w, chunk(`{"content":"hi"}`, "stop"), "[DONE]")
	})
	t.Setenv(EnvAPIKey, "")
	t.Setenv(EnvBaseURL, f.URL+"/v1")
	m, err := New(Config{Model: "llama3.2", HTTPClient: f.Client(), MaxTokens: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := providertest.Collect(t, m, providertest.Hello()); err != nil {
		t.Fatal(err)
	}
	if h := f.Header(0).Get("Authorization"); h != "" {
		t.Fatalf("Authorization sent without a key: %q", h)
	}
	if b := f.Body(0); b["max_tokens"] != 7.0 || b["max_completion_tokens"] != nil {
		t.Fatalf("a local server gets max_tokens: %v", b)
	}

	t.Setenv("AGENTPOOL_TEST_KEY", "sk-from-env")
	m, _ = New(Config{Model: "llama3.2", HTTPClient: f.Client(), APIKeyEnv: "AGENTPOOL_TEST_KEY"})
	if _, err := providertest.Collect(t, m, providertest.Hello()); err != nil {
		t.Fatal(err)
	}
	if h := f.Header(1).Get("Authorization"); h != "Bearer sk-from-env" {
		t.Fatalf("Authorization = %q", h)
	}
}

func TestCancelStopsStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w, chunk(`{"content":"first"}`, ""))
		providertest.Hold(r)
	})
	got, err := providertest.CancelAfterFirst(t, f.model(t, nil), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "first"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestConsumerStopsEarly(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w, chunk(`{"content":"a"}`, ""), chunk(`{"content":"b"}`, ""))
		providertest.Hold(r)
	})
	providertest.StopsEarly(t, f.model(t, nil), providertest.Hello())
}

func TestConcurrentStreams(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w, chunk(`{"content":"x"}`, "stop"), usageChunk(1, 1, 0, 0), "[DONE]")
	})
	providertest.Concurrently(t, f.model(t, nil), providertest.Hello(), 8, 3)
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
	_, err := providertest.Collect(t, m, &model.Request{Messages: providertest.Hello().Messages, Tools: []model.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}})
	if err == nil || !strings.Contains(err.Error(), "tool t: parameters are not a JSON schema object") {
		t.Fatalf("err = %v", err)
	}
}

func TestTimeoutMidStream(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		providertest.SSEData(w, chunk(`{"content":"slow"}`, ""))
		providertest.Hold(r)
	})
	got, err := providertest.Collect(t, f.model(t, func(c *Config) { c.Timeout = 300 * time.Millisecond }), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "slow"}})
	if err == nil || err.Error() != "openai: request timed out after 300ms (timeout)" {
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
		providertest.SSEData(w, chunk(`{"role":"assistant","content":"ok"}`, ""), chunk(`{}`, "stop"), "[DONE]")
	})
	m := f.model(t, func(c *Config) { c.BaseURL = f.URL + "/v1?" + "api-version=2024-06-01&tag=a&tag=b%2Fc" })
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
		providertest.SSEData(w, chunk(`{"content":"a"}`, ""))
		io.WriteString(w, "data: "+strings.Repeat("x", 2<<20))
		w.(http.Flusher).Flush()
		providertest.Hold(r)
	})
	got, err := providertest.Collect(t, f.model(t, nil), providertest.Hello())
	providertest.WantChunks(t, got, []model.Chunk{{Kind: model.ChunkText, Text: "a"}})
	if err == nil || err.Error() != "openai: stream broken: server-sent event longer than 1048576 bytes" {
		t.Fatalf("err = %v", err)
	}
}
