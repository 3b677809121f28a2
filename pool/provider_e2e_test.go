package pool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
)

// TestOpenAIProviderDelegatesEndToEnd runs a root agent on an openai model
// whose base_url is a fake Chat Completions server: the first response
// calls the task tool for an agent on the test model, the second (after
// the tool result) answers. It checks the child session, the final output,
// the request bodies and the usage and cost arithmetic.
func TestOpenAIProviderDelegatesEndToEnd(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []map[string]any
	)
	chunk := func(delta, finish string) string {
		fr := "null"
		if finish != "" {
			fr = `"` + finish + `"`
		}
		return `{"id":"chatcmpl-e2e","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[{"index":0,"delta":` +
			delta + `,"logprobs":null,"finish_reason":` + fr + `}],"usage":null}`
	}
	usage := func(in, out int) string {
		return fmt.Sprintf(`{"id":"chatcmpl-e2e","object":"chat.completion.chunk","created":1700000000,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-e2e-key" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, body)
		mu.Unlock()
		var frames []string
		switch n {
		case 0:
			frames = []string{
				chunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_task_1","type":"function","function":{"name":"task","arguments":""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"agent_or_team\":\"helper\","}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"prompt\":\"Compute the answer.\",\"description\":\"Compute\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
				usage(1000, 200),
			}
		case 1:
			frames = []string{
				chunk(`{"role":"assistant","content":"The helper "}`, ""),
				chunk(`{"content":"said 42."}`, ""),
				chunk(`{}`, "stop"),
				usage(1500, 100),
			}
		default:
			http.Error(w, `{"error":{"message":"too many requests in this test"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range append(frames, "[DONE]") {
			fmt.Fprintf(w, "data: %s\n\n", f)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()

	manifest := fmt.Sprintf(`
default_agent: boss
agents:
  boss:
    description: Delegates.
    model:
      type: openai
      model: gpt-test
      base_url: %s/v1
      api_key: sk-e2e-key
      input_price: 2.5
      output_price: 10
    system_prompt: You delegate work.
    tools: [subagent]
  helper:
    description: Computes answers.
    model: {type: test, custom_output_text: "helper says 42"}
`, srv.URL)
	m, err := config.Parse("e2e.yaml", []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Registry: batteries.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	var (
		emu    sync.Mutex
		events []event.Event
	)
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "What is the answer?"}, event.SinkFunc(func(e event.Event) {
		emu.Lock()
		events = append(events, e)
		emu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.Err != nil || res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	if res.Result.Output != "The helper said 42." {
		t.Fatalf("output %q", res.Result.Output)
	}

	// The child session completed with the test model's text.
	var ends []event.SpawnSessionEnd
	var final *event.StreamComplete
	for _, e := range events {
		sid, inner := event.Unwrap(res.SessionID, e)
		switch v := inner.(type) {
		case event.SpawnSessionEnd:
			ends = append(ends, v)
		case event.StreamComplete:
			if sid == res.SessionID {
				final = &v
			}
		}
	}
	if len(ends) != 1 || ends[0].StopReason != event.StopCompleted || ends[0].SourceName != "helper" ||
		ends[0].LastAssistantMessage != "helper says 42" || ends[0].ToolCallID != "call_task_1" {
		t.Fatalf("spawn_session_end: %+v", ends)
	}

	// Usage and cost: two model calls at 2.5 $/M input and 10 $/M output;
	// the test-model child has no price.
	wantCost := (2500*2.5 + 300*10) / 1e6
	if res.Result.Usage.InputTokens != 2500 || res.Result.Usage.OutputTokens != 300 {
		t.Fatalf("root usage %+v", res.Result.Usage)
	}
	if math.Abs(res.Result.Cost-wantCost) > 1e-12 || math.Abs(res.TotalCost-wantCost) > 1e-12 || res.TotalCost <= 0 {
		t.Fatalf("cost %v, total %v, want %v", res.Result.Cost, res.TotalCost, wantCost)
	}
	if res.TotalUsage.InputTokens <= 2500 || res.TotalUsage.OutputTokens <= 300 {
		t.Fatalf("total usage %+v does not include the child's", res.TotalUsage)
	}
	if final == nil || final.Message.Content != "The helper said 42." || math.Abs(final.Message.Cost-wantCost) > 1e-12 ||
		final.Message.FinishReason != "stop" || final.Message.Model != "gpt-test" {
		t.Fatalf("stream_complete: %+v", final)
	}

	// What the server received.
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("%d requests", len(bodies))
	}
	for i, b := range bodies {
		if b["model"] != "gpt-test" || b["stream"] != true {
			t.Fatalf("request %d: %v", i, b)
		}
		if so, _ := b["stream_options"].(map[string]any); so["include_usage"] != true {
			t.Fatalf("request %d: stream_options %v", i, b["stream_options"])
		}
		var names []string
		tools, _ := b["tools"].([]any)
		for _, tl := range tools {
			fn, _ := tl.(map[string]any)["function"].(map[string]any)
			names = append(names, fmt.Sprint(fn["name"]))
		}
		if !strings.Contains(strings.Join(names, ","), "task") {
			t.Fatalf("request %d: tools %v", i, names)
		}
	}
	msgs, _ := bodies[1]["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("second request messages: %v", msgs)
	}
	role := func(i int) string { return fmt.Sprint(msgs[i].(map[string]any)["role"]) }
	if role(0) != "system" || role(1) != "user" || role(2) != "assistant" || role(3) != "tool" {
		t.Fatalf("roles: %v", msgs)
	}
	call := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	fn := call["function"].(map[string]any)
	if call["id"] != "call_task_1" || fn["name"] != "task" ||
		fn["arguments"] != `{"agent_or_team":"helper","prompt":"Compute the answer.","description":"Compute"}` {
		t.Fatalf("assistant tool call: %v", call)
	}
	toolMsg := msgs[3].(map[string]any)
	var result struct {
		Output    string `json:"output"`
		SessionID string `json:"session_id"`
	}
	if toolMsg["tool_call_id"] != "call_task_1" || json.Unmarshal([]byte(fmt.Sprint(toolMsg["content"])), &result) != nil ||
		result.Output != "helper says 42" || result.SessionID != ends[0].ChildSessionID {
		t.Fatalf("tool message: %v", toolMsg)
	}
}
