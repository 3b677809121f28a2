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
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/external/acpagent"
)

// acpNodeModulesEnv names the node_modules of tests/acpagents (make
// test-deps installs them); unset: that directory in this checkout.
const acpNodeModulesEnv = "AGENTPOOL_ACP_NODE_MODULES"

// opencodeBinary returns the real opencode (npm opencode-linux-x64,
// pinned in tests/acpagents/package-lock.json), or skips: except under
// CI=true, where a missing binary fails the test.
func opencodeBinary(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(acpNodeModulesEnv)
	if dir == "" {
		dir = filepath.Join("..", "..", "tests", "acpagents", "node_modules")
	}
	bin, err := filepath.Abs(filepath.Join(dir, "opencode-linux-x64", "bin", "opencode"))
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		msg := fmt.Sprintf("the real opencode is not installed (%v): run `cd tests/acpagents && npm install --no-save` or set %s", err, acpNodeModulesEnv)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// fakeModel is an OpenAI-compatible chat completions server on loopback
// that streams answer word by word; a request whose last user message
// contains "wait forever" is held until the client goes away (waiting is
// closed once such a request arrived). With toolCalls, a request that
// has k tool results and offers the tool of toolCalls[k] is answered
// with that call (id call_fake_<k+1>); the tool results it got back
// (toolResults) and the tools each request offered (offeredTools) are
// kept.
type fakeModel struct {
	*httptest.Server
	answer    string
	toolCalls []fakeToolCall
	waiting   chan struct{}
	once      sync.Once
	mu        sync.Mutex
	results   []string
	offered   [][]string
}

// fakeToolCall is a tool call a fakeModel makes.
type fakeToolCall struct{ name, args string }

func (f *fakeModel) toolResults() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.results...)
}

func (f *fakeModel) offeredTools() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.offered...)
}

func newFakeModel(t *testing.T, answer string) *fakeModel {
	f := &fakeModel{answer: answer, waiting: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	last, answered := "", 0
	var results []string
	for _, m := range req.Messages {
		b, _ := json.Marshal(m.Content)
		switch m.Role {
		case "user":
			last = string(b)
		case "tool":
			answered++
			results = append(results, string(b))
		}
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	var call *fakeToolCall
	if answered < len(f.toolCalls) && slices.Contains(names, f.toolCalls[answered].name) {
		call = &f.toolCalls[answered]
	}
	f.mu.Lock()
	f.offered = append(f.offered, names)
	if answered > 0 {
		// This request's results are the conversation's so far: keep the
		// new ones.
		f.results = append(f.results, results[min(len(f.results), len(results)):]...)
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	if strings.Contains(last, "wait forever") {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		f.once.Do(func() { close(f.waiting) })
		<-r.Context().Done()
		return
	}
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fake-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	if call != nil {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_fake_%d", answered+1), "type": "function",
			"function": map[string]any{"name": call.name, "arguments": call.args}}}}, nil)
		chunk(map[string]any{}, "tool_calls")
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	for i, word := range strings.Fields(f.answer) {
		if i > 0 {
			word = " " + word
		}
		chunk(map[string]any{"content": word}, nil)
	}
	chunk(map[string]any{}, "stop")
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fake-model", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

// opencodeSetup is the real opencode's binary and a project whose
// opencode.json points at the fake model (extraConfig: more top-level
// keys, each after a comma), with an environment that keeps its home and
// XDG directories in a temporary folder and off the network.
type opencodeSetup struct {
	bin, project string
	env          map[string]string
}

func newOpencodeSetup(t *testing.T, model *fakeModel, extraConfig string) opencodeSetup {
	t.Helper()
	bin := opencodeBinary(t)
	project, home := t.TempDir(), t.TempDir()
	cfg := `{
  "$schema": "https://opencode.ai/config.json",
  "model": "fake/fake-model",
  "share": "disabled",
  "autoupdate": false,
  "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake", "options": {"baseURL": "` + model.URL + `/v1", "apiKey": "none"},
    "models": {"fake-model": {"name": "Fake model", "tool_call": true}}}}` + extraConfig + `
}`
	if err := os.WriteFile(filepath.Join(project, "opencode.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return opencodeSetup{bin: bin, project: project, env: map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_DATA_HOME": filepath.Join(home, ".local/share"),
		"XDG_STATE_HOME": filepath.Join(home, ".local/state"), "XDG_CACHE_HOME": filepath.Join(home, ".cache"),
		"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
	}}
}

// opencodeNode is the real `opencode acp` in such a project.
func opencodeNode(t *testing.T, name string, model *fakeModel, extraConfig string) *acpagent.Node {
	t.Helper()
	return newNode(t, acpagentConfig(newOpencodeSetup(t, model, extraConfig), name))
}

// acpagentConfig is the Config of a member named name that runs oc.
func acpagentConfig(oc opencodeSetup, name string) acpagent.Config {
	return acpagent.Config{
		Name: name, Command: oc.bin, Args: []string{"acp"}, Dir: oc.project, Env: oc.env,
		AllowFileOperations: true,
	}
}

// The real opencode answers a delegation, streamed: its message arrives
// as several text deltas of one part and is the child's result.
func TestOpencodeAnswersStreamed(t *testing.T) {
	model := newFakeModel(t, "The answer is forty-two, said the fake model.")
	oc := opencodeNode(t, "opencode", model, "")
	parent := parentNode{name: "parent", child: oc, times: 1}
	p, _ := testPool(t, nil, oc, parent)
	res, evs := run(t, context.Background(), p, "parent", "What is the answer?", nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("parent %+v", res.Result)
	}
	var end event.SpawnSessionEnd
	deltas := 0
	for _, e := range evs {
		switch v := e.(type) {
		case event.SpawnSessionEnd:
			end = v
		case event.Subagent:
			if d, ok := v.Event.(event.PartDelta); ok && d.Delta.PartDeltaKind == event.PartText {
				deltas++
			}
		}
	}
	if end.StopReason != event.StopCompleted || end.LastAssistantMessage != "The answer is forty-two, said the fake model." {
		t.Fatalf("child end %+v", end)
	}
	if deltas < 2 {
		t.Errorf("%d text deltas: the answer was not streamed", deltas)
	}
}

// Cancelling the run while opencode waits for its model sends
// session/cancel: opencode answers cancelled (it is not killed), the
// child ends aborted, and the process ends with the run.
func TestOpencodeCancelledMidRun(t *testing.T) {
	model := newFakeModel(t, "never sent")
	oc := opencodeNode(t, "opencode", model, "")
	parent := parentNode{name: "parent", child: oc, times: 1}
	p, _ := testPool(t, nil, oc, parent)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-model.waiting:
			cancel()
		case <-ctx.Done():
		}
	}()
	res, evs := run(t, ctx, p, "parent", "Please wait forever.", nil)
	var end event.SpawnSessionEnd
	for _, e := range evs {
		if v, ok := e.(event.SpawnSessionEnd); ok {
			end = v
		}
	}
	if end.StopReason != event.StopAborted || strings.Contains(end.Error, "killed") {
		t.Fatalf("child end %+v (parent %+v)", end, res.Result)
	}
}
