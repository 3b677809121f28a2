// Package opencodetest runs the real `opencode acp` offline in tests (the
// tests of external/acpagent and cli): the pinned binary, a fake
// OpenAI-compatible model server on loopback, and an opencode project
// whose opencode.json points at it, with the home and XDG directories in a
// temporary folder and the models fetch off. Tests only.
//
// The binary is npm opencode-linux-x64, pinned in
// tests/acpagents/package-lock.json (make test-deps installs it); the
// environment variable AGENTPOOL_ACP_NODE_MODULES names its node_modules.
// Without it the tests skip, except under CI=true, where they fail.
package opencodetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// NodeModulesEnv names the node_modules of tests/acpagents.
const NodeModulesEnv = "AGENTPOOL_ACP_NODE_MODULES"

// Binary returns the real opencode, or skips t: except under CI=true,
// where a missing binary fails it.
func Binary(t testing.TB) string {
	t.Helper()
	return Installed(t, "the real opencode", filepath.Join("opencode-linux-x64", "bin", "opencode"))
}

// Installed returns the absolute path of rel in the node_modules of
// tests/acpagents (NodeModulesEnv; unset, that directory of this
// checkout), or skips t when it is missing: except under CI=true, where a
// missing file fails it. what names it in the message.
func Installed(t testing.TB, what, rel string) string {
	t.Helper()
	dir := os.Getenv(NodeModulesEnv)
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		dir = filepath.Join(filepath.Dir(file), "..", "..", "tests", "acpagents", "node_modules")
	}
	bin, err := filepath.Abs(filepath.Join(dir, rel))
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		msg := fmt.Sprintf("%s is not installed (%v): run `cd tests/acpagents && npm install --no-save` or set %s", what, err, NodeModulesEnv)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Model is an OpenAI-compatible chat completions server on loopback that
// streams Answer word by word. A request whose last user message contains
// "wait forever" is held until the client goes away (Waiting is closed
// once such a request arrived). With ToolCalls, a request that has k tool
// results and offers the tool of ToolCalls[k] is answered with that call
// (id call_fake_<k+1>); the tool results it got back (ToolResults), the
// tools each request offered (OfferedTools) and each request's user
// messages (UserMessages) are kept. Set ToolCalls before
// the model is used.
type Model struct {
	*httptest.Server
	Answer    string
	ToolCalls []ToolCall
	Waiting   chan struct{}
	once      sync.Once
	mu        sync.Mutex
	results   []string
	offered   [][]string
	users     [][]string
}

// ToolCall is a tool call a Model makes: the tool's name and its
// arguments as JSON.
type ToolCall struct{ Name, Args string }

// NewModel starts a Model, closed with t.
func NewModel(t testing.TB, answer string) *Model {
	m := &Model{Answer: answer, Waiting: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

// ToolResults are the tool results the model was sent, in order.
func (m *Model) ToolResults() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.results...)
}

// UserMessages are the user messages (their content as JSON) of each
// request, in order (opencode also asks its model for a session title, in
// a request of its own).
func (m *Model) UserMessages() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]string(nil), m.users...)
}

// OfferedTools are the names of the tools each request offered, in order.
func (m *Model) OfferedTools() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]string(nil), m.offered...)
}

func (m *Model) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
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
	var results, users []string
	for _, msg := range req.Messages {
		b, _ := json.Marshal(msg.Content)
		switch msg.Role {
		case "user":
			last = string(b)
			users = append(users, last)
		case "tool":
			answered++
			results = append(results, string(b))
		}
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	var call *ToolCall
	if answered < len(m.ToolCalls) && slices.Contains(names, m.ToolCalls[answered].Name) {
		call = &m.ToolCalls[answered]
	}
	m.mu.Lock()
	m.offered = append(m.offered, names)
	m.users = append(m.users, users)
	// This request's results are the conversation's so far: keep the new
	// ones.
	m.results = append(m.results, results[min(len(m.results), len(results)):]...)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	if strings.Contains(last, "wait forever") {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		m.once.Do(func() { close(m.Waiting) })
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
			"function": map[string]any{"name": call.Name, "arguments": call.Args}}}}, nil)
		chunk(map[string]any{}, "tool_calls")
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	for i, word := range strings.Fields(m.Answer) {
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

// Setup is the real opencode's binary and a project whose opencode.json
// points at a Model, with an environment that keeps its home and XDG
// directories in a temporary folder (Home) and off the network.
type Setup struct {
	Bin, Project, Home string
	Env                map[string]string
}

// NewSetup makes a Setup for m (extraConfig: more top-level keys of
// opencode.json, each after a comma), or skips t (see Binary).
func NewSetup(t testing.TB, m *Model, extraConfig string) Setup {
	t.Helper()
	bin := Binary(t)
	project, home := t.TempDir(), t.TempDir()
	cfg := `{
  "$schema": "https://opencode.ai/config.json",
  "model": "fake/fake-model",
  "share": "disabled",
  "autoupdate": false,
  "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake", "options": {"baseURL": "` + m.URL + `/v1", "apiKey": "none"},
    "models": {"fake-model": {"name": "Fake model", "tool_call": true}}}}` + extraConfig + `
}`
	if err := os.WriteFile(filepath.Join(project, "opencode.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return Setup{Bin: bin, Project: project, Home: home, Env: map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_DATA_HOME": filepath.Join(home, ".local/share"),
		"XDG_STATE_HOME": filepath.Join(home, ".local/state"), "XDG_CACHE_HOME": filepath.Join(home, ".cache"),
		"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
	}}
}

// MemberYAML is the manifest entry of an agent called name that runs this
// opencode (provider custom, so that the pinned binary is used; cwd its
// project; env its environment), indented for the agents: map.
func (s Setup) MemberYAML(name, description string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s:\n    type: acp\n    provider: custom\n    command: %q\n    args: [acp]\n    cwd: %q\n    description: %q\n    env:\n",
		name, s.Bin, s.Project, description)
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "      %s: %q\n", k, s.Env[k])
	}
	return b.String()
}

// Leftovers are the processes still running with this setup's HOME in
// their environment: an opencode (or anything it started) that outlived
// what should have ended it. Processes whose environment cannot be read
// are not counted.
func (s Setup) Leftovers() []int {
	mark := []byte("\x00HOME=" + s.Home + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, env...), mark) {
			pids = append(pids, pid)
		}
	}
	return pids
}
