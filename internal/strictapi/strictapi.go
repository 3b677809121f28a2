// Package strictapi has fake OpenAI Chat Completions and Anthropic Messages
// servers for tests that must fail the way the real APIs fail on a
// conversation they reject. Both refuse, with status 400 and an error body
// shaped like the provider's, a conversation in which an assistant tool
// call has no result right after it (the state a run killed between a
// tool call and its result leaves behind); every other request gets a
// streamed text answer. It is for tests only.
package strictapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Server is a fake provider API. URL is its base URL: give it as base_url
// (OpenAI: URL + "/v1").
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []map[string]any
	rejected []string
}

// Bodies returns the JSON body of every request, rejected ones included.
func (s *Server) Bodies() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

// Rejected returns the error message of every request answered 400.
func (s *Server) Rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejected...)
}

// OpenAI starts a Chat Completions server (POST /v1/chat/completions) that
// answers with the text answer. As the OpenAI API does, it rejects an
// assistant message with tool_calls that is not followed by a tool message
// for each of its tool_call_ids.
func OpenAI(t testing.TB, answer string) *Server {
	return start(t, "/v1/chat/completions", checkOpenAI, func(w http.ResponseWriter) {
		chunk := func(delta, finish string) string {
			fr := "null"
			if finish != "" {
				fr = `"` + finish + `"`
			}
			return `{"id":"chatcmpl-strict","object":"chat.completion.chunk","created":1700000000,"model":"gpt-strict","choices":[{"index":0,"delta":` +
				delta + `,"logprobs":null,"finish_reason":` + fr + `}],"usage":null}`
		}
		text, _ := json.Marshal(answer)
		frames := []string{
			chunk(`{"role":"assistant","content":`+string(text)+`}`, ""),
			chunk(`{}`, "stop"),
			`{"id":"chatcmpl-strict","object":"chat.completion.chunk","created":1700000000,"model":"gpt-strict","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
			"[DONE]",
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range frames {
			fmt.Fprintf(w, "data: %s\n\n", f)
		}
	}, func(w http.ResponseWriter, msg string) {
		body, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": msg, "type": "invalid_request_error", "param": "messages", "code": nil,
		}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(body)
	})
}

// Anthropic starts a Messages server (POST /v1/messages) that answers with
// the text answer. As the Anthropic API does, it rejects an assistant
// message with tool_use blocks that is not followed by a user message
// starting with a tool_result block for each of them.
func Anthropic(t testing.TB, answer string) *Server {
	return start(t, "/v1/messages", checkAnthropic, func(w http.ResponseWriter) {
		text, _ := json.Marshal(answer)
		events := [][2]string{
			{"message_start", `{"type":"message_start","message":{"id":"msg_strict","type":"message","role":"assistant","content":[],"model":"claude-strict","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + string(text) + `}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`},
			{"message_stop", `{"type":"message_stop"}`},
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e[0], e[1])
		}
	}, func(w http.ResponseWriter, msg string) {
		body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(body)
	})
}

func start(t testing.TB, path string, check func(body map[string]any) string, answer func(http.ResponseWriter), reject func(http.ResponseWriter, string)) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != path {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			reject(w, "the body is not JSON")
			return
		}
		msg := check(body)
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		if msg != "" {
			s.rejected = append(s.rejected, msg)
		}
		s.mu.Unlock()
		if msg != "" {
			reject(w, msg)
			return
		}
		answer(w)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	s.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	s.Start()
	t.Cleanup(func() {
		cancel()
		s.Close()
	})
	return s
}

// checkOpenAI returns the error the OpenAI API gives for body's messages,
// or "".
func checkOpenAI(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	for i, m := range msgs {
		msg, _ := m.(map[string]any)
		if msg["role"] != "assistant" {
			continue
		}
		calls, _ := msg["tool_calls"].([]any)
		want := map[string]bool{}
		for _, c := range calls {
			if id, _ := c.(map[string]any)["id"].(string); id != "" {
				want[id] = true
			}
		}
		for _, n := range msgs[i+1:] {
			next, _ := n.(map[string]any)
			if next["role"] != "tool" {
				break
			}
			id, _ := next["tool_call_id"].(string)
			delete(want, id)
		}
		if len(want) > 0 {
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
				"The following tool_call_ids did not have response messages: " + strings.Join(keys(want), ", ")
		}
	}
	return ""
}

// checkAnthropic returns the error the Anthropic API gives for body's
// messages, or "".
func checkAnthropic(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	for i, m := range msgs {
		msg, _ := m.(map[string]any)
		if msg["role"] != "assistant" {
			continue
		}
		want := map[string]bool{}
		for _, b := range blocks(msg) {
			if b["type"] == "tool_use" {
				id, _ := b["id"].(string)
				want[id] = true
			}
		}
		if len(want) == 0 {
			continue
		}
		if i+1 < len(msgs) {
			next, _ := msgs[i+1].(map[string]any)
			if next["role"] == "user" {
				// The results must come first in the next message.
				for _, b := range blocks(next) {
					if b["type"] != "tool_result" {
						break
					}
					id, _ := b["tool_use_id"].(string)
					delete(want, id)
				}
			}
		}
		if len(want) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(keys(want), ", "))
		}
	}
	return ""
}

func blocks(msg map[string]any) []map[string]any {
	content, _ := msg["content"].([]any)
	out := make([]map[string]any, 0, len(content))
	for _, c := range content {
		if b, ok := c.(map[string]any); ok {
			out = append(out, b)
		}
	}
	return out
}

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
