package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var null = json.RawMessage("null")

// fakeEditor answers the server's fs/* and terminal/* requests like an
// editor: files come from its buffers (unsaved text), writes land in its
// buffers, and commands "run" with a scripted output and exit code.
type fakeEditor struct {
	t       *testing.T
	mu      sync.Mutex
	buffers map[string]string // path -> text
	writes  []writeTextFileParams
	creates []createTerminalParams
	output  string
	exit    int
	failFS  bool // answer fs requests with an error
	hangOn  string
	onHang  func()
}

func newFakeEditor(t *testing.T) *fakeEditor {
	return &fakeEditor{t: t, buffers: map[string]string{}}
}

func (e *fakeEditor) answer(w wire) any {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w.Method == e.hangOn {
		e.onHang()
		return nil
	}
	switch w.Method {
	case methodReadTextFile:
		var p readTextFileParams
		mustDecode(e.t, w.Params, &p)
		text, ok := e.buffers[p.Path]
		if e.failFS || !ok {
			return &rpcError{Code: codeResourceNotFound, Message: "no buffer for " + p.Path}
		}
		return map[string]any{"content": text}
	case methodWriteTextFile:
		var p writeTextFileParams
		mustDecode(e.t, w.Params, &p)
		if e.failFS {
			return &rpcError{Code: codeInternalError, Message: "read-only buffer"}
		}
		e.writes = append(e.writes, p)
		e.buffers[p.Path] = p.Content
		return null
	case methodTerminalCreate:
		var p createTerminalParams
		mustDecode(e.t, w.Params, &p)
		e.creates = append(e.creates, p)
		return map[string]any{"terminalId": "term_" + itoa(len(e.creates))}
	case methodTerminalWait:
		return map[string]any{"exitCode": e.exit}
	case methodTerminalOutput:
		return map[string]any{"output": e.output, "truncated": false, "exitStatus": map[string]any{"exitCode": e.exit}}
	case methodTerminalKill, methodTerminalRelease:
		return null
	}
	e.t.Errorf("unexpected request %s", w.line)
	return &rpcError{Code: codeMethodNotFound, Message: "no " + w.Method}
}

func mustDecode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

var allCaps = map[string]any{"fs": map[string]any{"readTextFile": true, "writeTextFile": true}, "terminal": true}

// TestClientFSAndTerminal: a client that advertises fs and terminal gets
// the file and shell tools' work: Read shows its unsaved buffer, Write
// and Edit land in it (not on the disk), Bash runs in its terminal, which
// the tool call embeds (as it starts and at its end) and which is
// released only after that.
func TestClientFSAndTerminal(t *testing.T) {
	p, _ := newToolsPool(t, toolsYAML(
		call("Read", `{file_path: notes.md}`),
		call("Write", `{file_path: new.md, content: "hello\n"}`),
		call("Edit", `{file_path: notes.md, old_string: tpyo, new_string: typo}`),
		call("Bash", `{command: "echo hi; exit 3"}`),
	))
	cwd := realDir(t, t.TempDir())
	notes, newFile := filepath.Join(cwd, "notes.md"), filepath.Join(cwd, "new.md")
	if err := os.WriteFile(notes, []byte("disk text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ed := newFakeEditor(t)
	ed.buffers[notes] = "unsaved: fix the tpyo\n"
	ed.output, ed.exit = "hi\n", 3

	h := startServer(t, p, Options{})
	h.initializeWith(allCaps)
	sid := h.newSessionIn(cwd, nil)
	w, ex := h.drive("session/prompt", promptParams(sid, "Edit the notes"), ed.answer)
	if stopReason(t, w) != stopEndTurn {
		t.Fatal("prompt did not end its turn")
	}
	tools := ex.tools(t)
	var ids []string
	for _, m := range ex.msgs {
		if u, ok := decodeToolUpdate(t, m); ok && u.SessionUpdate == updateToolCall {
			ids = append(ids, u.ToolCallID)
		}
	}
	if len(ids) != 4 {
		t.Fatalf("tool calls %v", ids)
	}
	read, write, edit, bash := last(t, tools[ids[0]], "read"), last(t, tools[ids[1]], "write"), last(t, tools[ids[2]], "edit"), tools[ids[3]]

	// Read: the editor's buffer, not the disk.
	if !strings.Contains(read.text(), "unsaved: fix the tpyo") || strings.Contains(read.text(), "disk text") {
		t.Errorf("Read result %q", read.text())
	}
	reads := ex.requests(methodReadTextFile)
	var rp readTextFileParams
	mustDecode(t, reads[0].Params, &rp)
	if rp.SessionID != sid || rp.Path != notes {
		t.Errorf("fs/read_text_file %+v", rp)
	}
	// Write and Edit: in the editor, the disk untouched.
	if write.Status != statusCompleted || edit.Status != statusCompleted {
		t.Fatalf("write %s %q, edit %s %q", write.Status, write.text(), edit.Status, edit.text())
	}
	want := []writeTextFileParams{
		{SessionID: sid, Path: newFile, Content: "hello\n"},
		{SessionID: sid, Path: notes, Content: "unsaved: fix the typo\n"},
	}
	if !slices.Equal(ed.writes, want) {
		t.Errorf("fs/write_text_file %+v, want %+v", ed.writes, want)
	}
	if _, err := os.Stat(newFile); !os.IsNotExist(err) {
		t.Errorf("new.md is on the disk: %v", err)
	}
	if b, _ := os.ReadFile(notes); string(b) != "disk text\n" {
		t.Errorf("notes.md on the disk changed: %q", b)
	}
	if d := edit.contentOf(contentTypeDiff); len(d) != 1 || *d[0].OldText.Text != "unsaved: fix the tpyo\n" {
		t.Errorf("Edit diff %+v", d)
	}

	// Bash: in the editor's terminal.
	if len(ed.creates) != 1 {
		t.Fatalf("terminal/create %+v", ed.creates)
	}
	if c := ed.creates[0]; c.SessionID != sid || c.Command != "/bin/sh" || !slices.Equal(c.Args, []string{"-c", "echo hi; exit 3"}) || c.Cwd != cwd || c.OutputByteLimit <= 0 {
		t.Errorf("terminal/create %+v", c)
	}
	end := last(t, bash, "bash")
	if !strings.Contains(end.text(), "hi\n") || !strings.Contains(end.text(), "Exit code: 3") {
		t.Errorf("Bash result %q", end.text())
	}
	if tc := end.contentOf(contentTypeTerminal); len(tc) != 1 || tc[0].TerminalID != "term_1" {
		t.Errorf("Bash end content %+v", end.Content)
	}
	// Embedded while it ran: before the server waited for its exit.
	attached := ex.index(func(w wire) bool {
		u, ok := decodeToolUpdate(t, w)
		return ok && u.ToolCallID == ids[3] && u.Status == "" && len(u.contentOf(contentTypeTerminal)) == 1
	})
	waited := ex.index(func(w wire) bool { return w.Method == methodTerminalWait })
	ended := ex.index(func(w wire) bool {
		u, ok := decodeToolUpdate(t, w)
		return ok && u.ToolCallID == ids[3] && u.Status == statusCompleted
	})
	released := ex.index(func(w wire) bool { return w.Method == methodTerminalRelease })
	if attached < 0 || waited < attached || ended < waited || released < 0 {
		t.Errorf("order: attached %d, wait %d, end %d, release %d", attached, waited, ended, released)
	}
	var rel terminalParams
	mustDecode(t, ex.msgs[released].Params, &rel)
	if rel != (terminalParams{SessionID: sid, TerminalID: "term_1"}) {
		t.Errorf("terminal/release %+v", rel)
	}

	// A replay shows the same kinds, locations and diffs, but not the
	// terminal (released long ago): the result text stays.
	w, ex = h.drive("session/load", map[string]any{"sessionId": sid, "cwd": cwd, "mcpServers": []any{}}, nil)
	if w.Error != nil {
		t.Fatal(w.Error)
	}
	again := ex.tools(t)
	if got := again[ids[0]][0]; got.Kind != "read" || !slices.Equal(got.Locations, []toolCallLocation{{Path: notes}}) {
		t.Errorf("replayed Read %+v", got)
	}
	if d := last(t, again[ids[2]], "edit").contentOf(contentTypeDiff); len(d) != 1 || *d[0].NewText != "unsaved: fix the typo\n" {
		t.Errorf("replayed Edit diff %+v", d)
	}
	if end := last(t, again[ids[3]], "bash"); len(end.contentOf(contentTypeTerminal)) != 0 || !strings.Contains(end.text(), "Exit code: 3") {
		t.Errorf("replayed Bash %+v", end)
	}
	if len(again[ids[3]]) != 2 {
		t.Errorf("replayed Bash updates %+v", again[ids[3]])
	}
}

// TestClientReadOnlyFS: a client that can only read gets the reads; the
// writes go to the disk.
func TestClientReadOnlyFS(t *testing.T) {
	p, _ := newToolsPool(t, toolsYAML(
		call("Read", `{file_path: notes.md}`),
		call("Edit", `{file_path: notes.md, old_string: tpyo, new_string: typo}`),
	))
	cwd := realDir(t, t.TempDir())
	notes := filepath.Join(cwd, "notes.md")
	if err := os.WriteFile(notes, []byte("disk: fix the tpyo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ed := newFakeEditor(t)
	ed.buffers[notes] = "buffer: fix the tpyo\n"
	h := startServer(t, p, Options{})
	h.initializeWith(map[string]any{"fs": map[string]any{"readTextFile": true}, "terminal": "yes"})
	sid := h.newSessionIn(cwd, nil)
	w, ex := h.drive("session/prompt", promptParams(sid, "Fix it"), ed.answer)
	stopReason(t, w)
	if len(ex.requests(methodWriteTextFile)) != 0 || len(ex.requests(methodTerminalCreate)) != 0 {
		t.Fatal("write or terminal requests without the capability")
	}
	if len(ex.requests(methodReadTextFile)) == 0 {
		t.Fatal("no fs/read_text_file")
	}
	b, _ := os.ReadFile(notes)
	st, _ := os.Stat(notes)
	if string(b) != "buffer: fix the typo\n" || st.Mode().Perm() != 0o600 {
		t.Errorf("notes.md on the disk: %q %v", b, st.Mode())
	}
}

// TestClientFailuresAndCancel: an editor that answers fs requests with
// errors gives the tools error results (the turn goes on); a prompt
// cancelled while the terminal's command runs ends at once, killing and
// releasing the terminal.
func TestClientFailuresAndCancel(t *testing.T) {
	p, _ := newToolsPool(t, toolsYAML(
		call("Read", `{file_path: notes.md}`),
		call("Write", `{file_path: new.md, content: "x"}`),
		call("Bash", `{command: "sleep 1000"}`),
	))
	cwd := realDir(t, t.TempDir())
	ed := newFakeEditor(t)
	ed.failFS = true
	h := startServer(t, p, Options{})
	h.initializeWith(allCaps)
	sid := h.newSessionIn(cwd, nil)
	ed.hangOn = methodTerminalWait
	ed.onHang = func() {
		h.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	}
	start := time.Now()
	w, ex := h.drive("session/prompt", promptParams(sid, "Try"), ed.answer)
	if got := stopReason(t, w); got != stopCancelled {
		t.Fatalf("stop reason %s", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancel took %s", d)
	}
	tools := ex.tools(t)
	var failed []string
	for id, ups := range tools {
		if u := last(t, ups, id); u.Status == statusFailed {
			failed = append(failed, u.text())
		}
	}
	joined := strings.Join(failed, "\n")
	if !strings.Contains(joined, "no buffer for") && !strings.Contains(joined, "does not exist") {
		t.Errorf("Read failure not reported: %q", joined)
	}
	if !strings.Contains(joined, "read-only buffer") {
		t.Errorf("Write failure not reported: %q", joined)
	}
	if len(ex.requests(methodTerminalKill)) != 1 || len(ex.requests(methodTerminalRelease)) != 1 {
		t.Errorf("kill %d, release %d requests", len(ex.requests(methodTerminalKill)), len(ex.requests(methodTerminalRelease)))
	}
	// The late answer to the abandoned wait is dropped quietly.
	h.send(map[string]any{"jsonrpc": "2.0", "id": ex.requests(methodTerminalWait)[0].ID, "result": map[string]any{"exitCode": 0}})
	h.noMessage()
}
