package acp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

// toolsYAML is an examples/tools.yaml-like manifest: one agent with the
// file, shell and plan tools, every tool allowed, and a scripted model
// making the given turns (YAML list items, indented by 8).
func toolsYAML(turns ...string) string {
	return `
default_agent: editor
agents:
  editor:
    tools: [file_access, execution, plan]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
` + strings.Join(turns, "\n") + `
        - text: "Done."
`
}

// call is a scripted turn with one tool call.
func call(name, args string) string {
	return fmt.Sprintf("        - tool_calls:\n            - {name: %s, args: %s}", name, args)
}

// newToolsPool makes a pool whose own workspace is a fresh directory (so
// that a session's cwd is told apart from it).
func newToolsPool(t *testing.T, yaml string) (*pool.Pool, string) {
	t.Helper()
	dir := realDir(t, t.TempDir())
	return servertest.PoolWith(t, yaml, pool.Options{Workspace: dir}), dir
}

func realDir(t *testing.T, dir string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// toolUpdate is a decoded tool_call or tool_call_update.
type toolUpdate struct {
	SessionUpdate string             `json:"sessionUpdate"`
	ToolCallID    string             `json:"toolCallId"`
	Title         string             `json:"title"`
	Kind          string             `json:"kind"`
	Status        string             `json:"status"`
	Locations     []toolCallLocation `json:"locations"`
	Content       []toolCallContent  `json:"content"`
	RawInput      json.RawMessage    `json:"rawInput"`
	RawOutput     json.RawMessage    `json:"rawOutput"`
}

// exchange is what the server sent while a request ran: notifications and
// its own requests, in wire order.
type exchange struct {
	msgs []wire
}

// drive sends a request and reads until its response, answering the
// server's requests with answer (a *rpcError answers with that error; nil
// leaves the request unanswered). It returns the response and the
// exchange.
func (h *harness) drive(method string, params any, answer func(w wire) any) (wire, exchange) {
	h.t.Helper()
	id := h.request(method, params)
	var ex exchange
	for {
		w := h.next()
		switch {
		case w.Method != "":
			ex.msgs = append(ex.msgs, w)
			if w.ID == nil {
				continue
			}
			if answer == nil {
				h.t.Fatalf("unexpected request from the server: %s", w.line)
			}
			switch a := answer(w).(type) {
			case nil:
			case *rpcError:
				h.send(map[string]any{"jsonrpc": "2.0", "id": w.ID, "error": a})
			default:
				h.send(map[string]any{"jsonrpc": "2.0", "id": w.ID, "result": a})
			}
		case string(w.ID) == id:
			return w, ex
		default:
			h.t.Fatalf("unexpected message while waiting for %s: %s", id, w.line)
		}
	}
}

// tools returns the tool_call and tool_call_update notifications by tool
// call id, in order.
func (ex exchange) tools(t *testing.T) map[string][]toolUpdate {
	t.Helper()
	out := map[string][]toolUpdate{}
	for _, w := range ex.msgs {
		if w.Method != methodSessionUpdate {
			continue
		}
		if u, ok := decodeToolUpdate(t, w); ok {
			out[u.ToolCallID] = append(out[u.ToolCallID], u)
		}
	}
	return out
}

// decodeToolUpdate decodes a session/update that is a tool_call or a
// tool_call_update.
func decodeToolUpdate(t *testing.T, w wire) (toolUpdate, bool) {
	t.Helper()
	var kind struct {
		Update struct {
			SessionUpdate string `json:"sessionUpdate"`
		} `json:"update"`
	}
	if w.Method != methodSessionUpdate || json.Unmarshal(w.Params, &kind) != nil {
		return toolUpdate{}, false
	}
	if k := kind.Update.SessionUpdate; k != updateToolCall && k != updateToolCallUpdate {
		return toolUpdate{}, false
	}
	var n struct {
		Update toolUpdate `json:"update"`
	}
	if err := json.Unmarshal(w.Params, &n); err != nil {
		t.Fatalf("%s: %v", w.line, err)
	}
	return n.Update, true
}

// requests returns the server's requests of a method.
func (ex exchange) requests(method string) []wire {
	var out []wire
	for _, w := range ex.msgs {
		if w.Method == method && w.ID != nil {
			out = append(out, w)
		}
	}
	return out
}

// index is the position of the first message matching f; -1 if none.
func (ex exchange) index(f func(w wire) bool) int {
	return slices.IndexFunc(ex.msgs, f)
}

func (h *harness) newSessionIn(cwd string, mcpServers any) string {
	h.t.Helper()
	if mcpServers == nil {
		mcpServers = []any{}
	}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	h.mustCall("session/new", map[string]any{"cwd": cwd, "mcpServers": mcpServers}, &res)
	return res.SessionID
}

func (h *harness) initializeWith(caps map[string]any) {
	h.t.Helper()
	h.mustCall("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps}, nil)
}

func (u toolUpdate) text() string {
	var parts []string
	for _, c := range u.Content {
		if c.Type == contentTypeContent {
			parts = append(parts, c.Content.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (u toolUpdate) contentOf(typ string) []toolCallContent {
	var out []toolCallContent
	for _, c := range u.Content {
		if c.Type == typ {
			out = append(out, c)
		}
	}
	return out
}

// last is the last update of a tool call; it must have ended.
func last(t *testing.T, ups []toolUpdate, id string) toolUpdate {
	t.Helper()
	if len(ups) == 0 {
		t.Fatalf("no updates of tool call %s", id)
	}
	u := ups[len(ups)-1]
	if u.Status != statusCompleted && u.Status != statusFailed {
		t.Fatalf("tool call %s did not end: %+v", id, u)
	}
	return u
}

// TestToolCallsInSessionCwd: the builtin tools act in the session's cwd
// (not the pool's workspace) and their tool calls carry kinds, locations
// and diffs; without client capabilities everything happens on the disk.
func TestToolCallsInSessionCwd(t *testing.T) {
	p, poolDir := newToolsPool(t, toolsYAML(
		call("Write", `{file_path: notes.md, content: "# Notes\n- fix the tpyo\n"}`),
		call("Read", `{file_path: notes.md, offset: 2}`),
		call("Edit", `{file_path: notes.md, old_string: tpyo, new_string: typo}`),
		call("Grep", `{pattern: typo, output_mode: content, "-n": true}`),
		call("Bash", `{command: "pwd; cat notes.md"}`),
	))
	cwd := realDir(t, t.TempDir())
	h := startServer(t, p, Options{})
	h.initialize(false)
	sid := h.newSessionIn(cwd, nil)
	w, ex := h.drive("session/prompt", promptParams(sid, "Tidy the notes"), nil)
	if stopReason(t, w) != stopEndTurn {
		t.Fatalf("stop reason %s", w.Result)
	}
	notes := filepath.Join(cwd, "notes.md")
	if b, err := os.ReadFile(notes); err != nil || string(b) != "# Notes\n- fix the typo\n" {
		t.Fatalf("notes.md in the session's cwd: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(poolDir, "notes.md")); !os.IsNotExist(err) {
		t.Fatalf("notes.md written in the pool's workspace: %v", err)
	}

	var ids []string
	tools := ex.tools(t)
	for _, m := range ex.msgs {
		if u, ok := decodeToolUpdate(t, m); ok && u.SessionUpdate == updateToolCall {
			ids = append(ids, u.ToolCallID)
		}
	}
	if len(ids) != 5 {
		t.Fatalf("tool calls %v", ids)
	}
	kinds := []string{"edit", "read", "edit", "search", "execute"}
	for i, id := range ids {
		start := tools[id][0]
		if start.Kind != kinds[i] || start.Status != statusInProgress || len(start.RawInput) == 0 {
			t.Errorf("tool call %d: %+v, want kind %s", i, start, kinds[i])
		}
		if end := last(t, tools[id], id); end.Status != statusCompleted {
			t.Errorf("tool call %d failed: %s", i, end.text())
		}
	}
	write, read, edit, grep, bash := tools[ids[0]], tools[ids[1]], tools[ids[2]], tools[ids[3]], tools[ids[4]]

	// Locations: the session's files, with the line where one is known.
	for _, c := range []struct {
		name string
		got  []toolCallLocation
		want []toolCallLocation
	}{
		{"Write start", write[0].Locations, []toolCallLocation{{Path: notes}}},
		{"Read start", read[0].Locations, []toolCallLocation{{Path: notes, Line: 2}}},
		{"Edit start", edit[0].Locations, []toolCallLocation{{Path: notes}}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s locations %+v, want %+v", c.name, c.got, c.want)
		}
	}
	// The result names the same file as the start: not repeated.
	if locs := last(t, read, "read").Locations; locs != nil {
		t.Errorf("Read result repeats its locations %+v", locs)
	}
	if !strings.Contains(last(t, grep, "grep").text(), "notes.md:2:- fix the typo") {
		t.Errorf("Grep result %q", last(t, grep, "grep").text())
	}

	// Diffs: a new file (oldText null) and an edit.
	d := last(t, write, "write").contentOf(contentTypeDiff)
	if len(d) != 1 || d[0].Path != notes || d[0].OldText.Text != nil || !d[0].OldText.Set || *d[0].NewText != "# Notes\n- fix the tpyo\n" {
		t.Errorf("Write diff %+v", d)
	}
	d = last(t, edit, "edit").contentOf(contentTypeDiff)
	if len(d) != 1 || d[0].OldText.Text == nil || *d[0].OldText.Text != "# Notes\n- fix the tpyo\n" || *d[0].NewText != "# Notes\n- fix the typo\n" {
		t.Errorf("Edit diff %+v", d)
	}
	if txt := last(t, edit, "edit").text(); !strings.Contains(txt, "Edited") {
		t.Errorf("Edit keeps its result text: %q", txt)
	}
	// Bash ran in the session's cwd, on this machine (no terminal).
	end := last(t, bash, "bash")
	if !strings.Contains(end.text(), cwd+"\n# Notes") || !strings.Contains(end.text(), "Exit code: 0") || len(end.contentOf(contentTypeTerminal)) != 0 {
		t.Errorf("Bash result %+v", end)
	}
	if len(ex.requests(methodReadTextFile)) != 0 || len(ex.requests(methodTerminalCreate)) != 0 {
		t.Error("client methods used without the capabilities")
	}
}

// TestSessionCwdFallsBack: a cwd that is no directory leaves the session
// in the pool's workspace.
func TestSessionCwdFallsBack(t *testing.T) {
	p, poolDir := newToolsPool(t, toolsYAML(call("Bash", `{command: pwd}`)))
	h := startServer(t, p, Options{})
	h.initialize(false)
	sid := h.newSessionIn(filepath.Join(t.TempDir(), "missing"), nil)
	w, ex := h.drive("session/prompt", promptParams(sid, "Where am I?"), nil)
	stopReason(t, w)
	for id, ups := range ex.tools(t) {
		if got := last(t, ups, id).text(); !strings.HasPrefix(got, poolDir+"\n") {
			t.Errorf("pwd %q, want the pool's workspace %s", got, poolDir)
		}
	}
}
