package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
)

// mcpHelperEnv makes the test binary a stdio MCP server with the tools
// echo, pid and cwd (TestMain).
const mcpHelperEnv = "AGENTPOOL_ACP_TEST_MCP"

func runMCPHelper() int {
	s := sdk.NewServer(&sdk.Implementation{Name: "helper", Version: "1"}, nil)
	type args struct {
		Text string `json:"text,omitempty"`
	}
	add := func(name string, f func(in args) string) {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: "helper " + name},
			func(_ context.Context, _ *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: f(in)}}}, nil, nil
			})
	}
	add("echo", func(in args) string { return "echo: " + in.Text + " " + os.Getenv("HELPER_GREETING") })
	add("pid", func(args) string { return strconv.Itoa(os.Getpid()) })
	add("cwd", func(args) string { wd, _ := os.Getwd(); return wd })
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
	}
	return 0
}

// helperServer is the mcpServers entry of the helper.
func helperServer(t *testing.T, name string) map[string]any {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"name": name, "command": exe, "args": []string{}, "env": []map[string]string{
		{"name": mcpHelperEnv, "value": "server"}, {"name": "HELPER_GREETING", "value": "from the editor"},
	}}
}

// gone waits until process pid has exited: its pidfd tells. (The stop
// reaps it in a goroutine of its own after; that has no notice to wait
// for, and goleak fails the package if that goroutine never ends.)
func gone(t *testing.T, pid int) {
	t.Helper()
	if !proctreetest.WaitExit(pid, 10*time.Second) {
		t.Fatalf("MCP server process %d still runs", pid)
	}
}

// mcpResults runs a prompt and returns the text of each ended tool call,
// by tool name order of the calls.
func mcpResults(t *testing.T, h *harness, sid string) []toolUpdate {
	t.Helper()
	w, ex := h.drive("session/prompt", promptParams(sid, "Use the helper"), nil)
	if stopReason(t, w) != stopEndTurn {
		t.Fatal("prompt did not end its turn")
	}
	tools := ex.tools(t)
	var out []toolUpdate
	for _, m := range ex.msgs {
		if u, ok := decodeToolUpdate(t, m); ok && u.SessionUpdate == updateToolCall {
			out = append(out, last(t, tools[u.ToolCallID], u.ToolCallID))
		}
	}
	return out
}

// TestSessionMCPServers: the stdio MCP server named in session/new is the
// session's: its tools are offered as mcp__<name>__<tool> and work (in the
// session's cwd, with the entry's env); session/close stops the process.
// The name is made a valid prefix ("my helper" -> my_helper).
func TestSessionMCPServers(t *testing.T) {
	p, _ := newToolsPool(t, toolsYAML(
		call("mcp__my_helper__echo", `{text: hi}`),
		call("mcp__my_helper__pid", `{}`),
		call("mcp__my_helper__cwd", `{}`),
	))
	cwd := realDir(t, t.TempDir())
	h := startServer(t, p, Options{})
	h.initialize(false)
	sid := h.newSessionIn(cwd, []any{helperServer(t, "my helper")})
	res := mcpResults(t, h, sid)
	if len(res) != 3 {
		t.Fatalf("%d tool calls", len(res))
	}
	for _, r := range res {
		if r.Status != statusCompleted {
			t.Fatalf("tool call failed: %s", r.text())
		}
	}
	if got := res[0].text(); got != "echo: hi from the editor" {
		t.Errorf("echo: %q", got)
	}
	if got := res[2].text(); got != cwd {
		t.Errorf("the server runs in %q, want the session's cwd %s", got, cwd)
	}
	pid, err := strconv.Atoi(res[1].text())
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the server is not running between prompts: %v", err)
	}

	// Another session does not have them.
	other := h.newSessionIn(cwd, nil)
	if r := mcpResults(t, h, other); r[0].Status != statusFailed || !strings.Contains(r[0].text(), "unknown tool") {
		t.Errorf("another session called the helper: %+v", r[0])
	}

	h.mustCall("session/close", map[string]any{"sessionId": sid}, nil)
	gone(t, pid)
}

// TestSessionMCPServersEndWithConnection: the end of the connection stops
// every session's MCP servers; session/load brings them back (new ones).
func TestSessionMCPServersEndWithConnection(t *testing.T) {
	p, _ := newToolsPool(t, toolsYAML(call("mcp__helper__pid", `{}`)))
	cwd := realDir(t, t.TempDir())
	h := startServer(t, p, Options{})
	h.initialize(false)
	sid := h.newSessionIn(cwd, []any{helperServer(t, "helper")})
	first, _ := strconv.Atoi(mcpResults(t, h, sid)[0].text())

	// Loading it again with its servers replaces them.
	h.mustCall("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{helperServer(t, "helper")}}, nil)
	gone(t, first)
	res := mcpResults(t, h, sid)
	second, err := strconv.Atoi(res[len(res)-1].text())
	if err != nil || second == first {
		t.Fatalf("after load: %q", res[len(res)-1].text())
	}
	h.close()
	gone(t, second)
}

// TestSessionMCPServersInvalid: invalid entries are -32602 errors naming
// the entry; no session is created.
func TestSessionMCPServersInvalid(t *testing.T) {
	p, _ := newToolsPool(t, toolsYAML())
	h := startServer(t, p, Options{})
	h.initialize(false)
	cwd := t.TempDir()
	good := map[string]any{"name": "o_k", "command": "true", "args": []string{}, "env": []any{}}
	for _, tc := range []struct {
		entry any
		want  string
	}{
		{"stdio", `mcpServers[1]: an MCP server must be an object`},
		{map[string]any{"command": "x", "args": []string{}, "env": []any{}}, `mcpServers[1]: name is required`},
		{map[string]any{"name": "a", "args": []string{}, "env": []any{}}, `mcpServers[1] ("a"): command is required`},
		{map[string]any{"name": "a", "command": "x", "args": "-v", "env": []any{}}, `mcpServers[1]: args: expected []string`},
		{map[string]any{"name": "a", "command": "x", "args": []string{}, "env": []any{map[string]string{"value": "v"}}}, `mcpServers[1] ("a"): env: entry 0 has no name`},
		{map[string]any{"type": "http", "name": "web", "url": "ftp://x", "headers": []any{}}, `mcpServers[1] ("web"): url must be an http or https URL`},
		{map[string]any{"type": "websocket", "name": "ws", "url": "ws://x"}, `mcpServers[1] ("ws"): unknown type "websocket"`},
		{map[string]any{"name": "o.k", "command": "true", "args": []string{}, "env": []any{}}, `mcpServers[1] ("o.k"): duplicate name: mcpServers[0] has the same tool prefix mcp__o_k__`},
	} {
		w, _ := h.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{good, tc.entry}})
		if w.Error == nil || w.Error.Code != codeInvalidParams || !strings.Contains(w.Error.Message, tc.want) {
			t.Errorf("%v: got %+v, want -32602 with %q", tc.entry, w.Error, tc.want)
		}
	}
	// http and sse entries are accepted (servers start on first use).
	var res struct {
		SessionID string `json:"sessionId"`
	}
	h.mustCall("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{
		map[string]any{"type": "http", "name": "web", "url": "http://127.0.0.1:1/mcp", "headers": []map[string]string{{"name": "Authorization", "value": "Bearer x"}}},
		map[string]any{"type": "sse", "name": "events", "url": "http://127.0.0.1:1/sse", "headers": []any{}},
	}}, &res)
	if res.SessionID == "" {
		t.Fatal("no session")
	}
}

func TestParseMCPServers(t *testing.T) {
	cfgs, err := parseMCPServers([]json.RawMessage{
		[]byte(`{"name":"git tools","command":"git-mcp","args":["--ro"],"env":[{"name":"A","value":"1"}]}`),
		[]byte(`{"type":"http","name":"web","url":"https://example.com/mcp","headers":[{"name":"X-Key","value":"k"}]}`),
		[]byte(`{"type":"sse","name":"ev","url":"http://localhost:9/sse","headers":[]}`),
	}, "/work/dir")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v", cfgs)
	for _, want := range []string{
		"Name:git_tools Transport:stdio Command:git-mcp Args:[--ro] Env:map[A:1] Dir:/work/dir",
		"Name:web Transport:streamable-http", "URL:https://example.com/mcp Headers:map[X-Key:k]",
		"Name:ev Transport:sse",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("configs %s lack %s", got, want)
		}
	}
}

// TestSessionCloseCancelsPrompt: session/close cancels the prompt in
// progress (it answers cancelled) and stops the session's MCP servers;
// the stored session can be prompted again (without them).
func TestSessionCloseCancelsPrompt(t *testing.T) {
	p, _ := newToolsPool(t, toolsYAML(
		call("mcp__helper__pid", `{}`),
		call("Bash", `{command: "sleep 30"}`),
	))
	h := startServer(t, p, Options{})
	h.initialize(false)
	sid := h.newSessionIn(realDir(t, t.TempDir()), []any{helperServer(t, "helper")})
	promptID := h.request("session/prompt", promptParams(sid, "Work"))
	pid := 0
	for pid == 0 { // until the pid tool's result arrives
		u, ok := decodeToolUpdate(t, h.next())
		if ok && u.Status == statusCompleted {
			pid, _ = strconv.Atoi(u.text())
		}
	}
	closeID := h.request("session/close", map[string]any{"sessionId": sid})
	var answered []string
	for len(answered) < 2 {
		w := h.next()
		switch string(w.ID) {
		case promptID:
			if got := stopReason(t, w); got != stopCancelled {
				t.Errorf("prompt answered %s", got)
			}
			answered = append(answered, "prompt")
		case closeID:
			if w.Error != nil {
				t.Fatalf("session/close: %+v", w.Error)
			}
			answered = append(answered, "close")
		}
	}
	gone(t, pid)
	// Closing a session that is not open here, or unknown.
	h.mustCall("session/close", map[string]any{"sessionId": sid}, nil)
	if w, _ := h.call("session/close", map[string]any{"sessionId": "ses_nope"}); w.Error == nil || w.Error.Code != codeResourceNotFound {
		t.Errorf("unknown session: %+v", w.Error)
	}
}
