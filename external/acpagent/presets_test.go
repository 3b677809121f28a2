package acpagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/external/acpagent"
	"github.com/agentpool/agentpool/internal/opencodetest"
)

// The claude and codex presets' programs (claude-agent-acp, codex-acp),
// pinned in tests/acpagents, against fakes of their providers' APIs on
// loopback: the Anthropic Messages API and the OpenAI Responses API (the
// only one codex speaks: its providers must say wire_api = "responses").

// presetAnswer is what both fakes stream, word by word.
const presetAnswer = "The answer is forty-two, said the fake provider."

// acpAgentBin is a command of tests/acpagents/node_modules/.bin, or skips
// (fails under CI=true) when it is not installed.
func acpAgentBin(t *testing.T, name string) string {
	t.Helper()
	return opencodetest.Installed(t, name, filepath.Join(".bin", name))
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, name string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	w.(http.Flusher).Flush()
}

// fakeAnthropic answers every Messages API request with presetAnswer,
// streamed when asked to be (Claude Code also asks for a title).
func fakeAnthropic(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		usage := map[string]any{"input_tokens": 12, "output_tokens": 9}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model,
				"content": []any{map[string]any{"type": "text", "text": presetAnswer}}, "stop_reason": "end_turn", "usage": usage})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_fake", "type": "message", "role": "assistant",
			"model": req.Model, "content": []any{}, "stop_reason": nil, "usage": map[string]any{"input_tokens": 12, "output_tokens": 1}}})
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for i, word := range strings.Fields(presetAnswer) {
			if i > 0 {
				word = " " + word
			}
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": word}})
		}
		sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 9}})
		sse(w, "message_stop", map[string]any{"type": "message_stop"})
	}))
	t.Cleanup(s.Close)
	return s
}

// fakeResponses answers every Responses API request with presetAnswer,
// streamed.
func fakeResponses(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_fake"}})
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"type": "message", "role": "assistant", "id": "msg_fake", "content": []any{}}})
		for i, word := range strings.Fields(presetAnswer) {
			if i > 0 {
				word = " " + word
			}
			sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "msg_fake", "output_index": 0, "content_index": 0, "delta": word})
		}
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0,
			"item": map[string]any{"type": "message", "role": "assistant", "id": "msg_fake", "content": []any{map[string]any{"type": "output_text", "text": presetAnswer}}}})
		sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_fake",
			"usage": map[string]any{"input_tokens": 12, "input_tokens_details": nil, "output_tokens": 9, "output_tokens_details": nil, "total_tokens": 21}}})
	}))
	t.Cleanup(s.Close)
	return s
}

// answersStreamed delegates to the member and checks that its answer is
// the fake provider's, streamed as several text deltas. The programs add
// notices of their own to the message (a fake model's missing metadata,
// a gateway's billing): the answer must be in the final message.
func answersStreamed(t *testing.T, cfg acpagent.Config) {
	t.Helper()
	node := newNode(t, cfg)
	p, _ := testPool(t, nil, node, parentNode{name: "parent", child: node, times: 1})
	res, evs := run(t, context.Background(), p, "parent", "What is the answer?", nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("parent %+v", res.Result)
	}
	var end event.SpawnSessionEnd
	var streamed strings.Builder
	deltas := 0
	for _, e := range evs {
		switch v := e.(type) {
		case event.SpawnSessionEnd:
			end = v
		case event.Subagent:
			if d, ok := v.Event.(event.PartDelta); ok && d.Delta.PartDeltaKind == event.PartText {
				deltas++
				streamed.WriteString(d.Delta.ContentDelta)
			}
		}
	}
	t.Logf("final message: %q", end.LastAssistantMessage)
	if end.StopReason != event.StopCompleted || !strings.Contains(end.LastAssistantMessage, presetAnswer) {
		t.Fatalf("child end %+v", end)
	}
	if deltas < 3 || !strings.Contains(streamed.String(), presetAnswer) {
		t.Errorf("%d text deltas %q: the answer was not streamed", deltas, streamed.String())
	}
}

// Claude Code through claude-agent-acp (the claude preset's program)
// answers from a fake Anthropic API (ANTHROPIC_BASE_URL), streamed.
func TestClaudePresetAnswersStreamed(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	bin := acpAgentBin(t, "claude-agent-acp")
	api := fakeAnthropic(t)
	home := t.TempDir()
	answersStreamed(t, acpagent.Config{Name: "claude", Command: bin, Dir: t.TempDir(), Env: map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL": api.URL, "ANTHROPIC_API_KEY": "sk-ant-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
		// Claude Code refuses to start its session as root (the test
		// machine's user) outside a sandbox.
		"IS_SANDBOX": "1",
	}})
}

// Codex through codex-acp (the codex preset's program) answers from a
// fake OpenAI Responses API (a provider in $CODEX_HOME/config.toml),
// streamed.
func TestCodexPresetAnswersStreamed(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	bin := acpAgentBin(t, "codex-acp")
	api := fakeResponses(t)
	home := t.TempDir()
	codexHome := filepath.Join(home, "codex")
	if err := os.Mkdir(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	config := `model = "gpt-5"
model_provider = "fake"

[model_providers.fake]
name = "Fake"
base_url = "` + api.URL + `/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
`
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	answersStreamed(t, acpagent.Config{Name: "codex", Command: bin, Dir: t.TempDir(), Env: map[string]string{
		"HOME": home, "CODEX_HOME": codexHome, "FAKE_API_KEY": "sk-fake",
	}})
}
