package opencode

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session/sqlite"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// toolsYAML: a scripted agent that uses the builtin tools in its
// workspace, as examples/tools.yaml does.
const toolsYAML = `
default_agent: editor
agents:
  editor:
    description: Keeps the notes tidy.
    tools: [file_access, execution, plan]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
        - tool_calls:
            - name: TodoWrite
              args:
                todos:
                  - {content: Write the notes, status: in_progress, activeForm: Writing the notes}
                  - {content: Fix the typo, status: pending, activeForm: Fixing the typo}
        - tool_calls:
            - name: Write
              args: {file_path: notes/today.md, content: "# Today\n\n- ship the tools\n- fix the tpyo\n- write the docs\n"}
        - tool_calls:
            - name: Read
              args: {file_path: notes/today.md, limit: 10}
        - tool_calls:
            - name: Glob
              args: {pattern: "**/*.md"}
        - tool_calls:
            - name: Grep
              args: {pattern: tpyo, path: ., glob: "*.md", output_mode: content, "-n": true}
        - tool_calls:
            - name: Edit
              args: {file_path: notes/today.md, old_string: tpyo, new_string: typo}
        - tool_calls:
            - name: LS
              args: {path: notes}
        - tool_calls:
            - name: Bash
              args: {command: "grep -c typo notes/today.md; exit 3", description: Count the typos}
        - tool_calls:
            - name: TodoWrite
              args:
                todos:
                  - {content: Write the notes, status: completed, activeForm: Writing the notes}
                  - {content: Fix the typo, status: completed, activeForm: Fixing the typo}
        - text: "The notes are tidy."
`

// toolsPool is a pool of toolsYAML acting in workspace, storing into the
// SQLite database db. close closes it (once).
func toolsPool(t *testing.T, workspace, db string) (p *pool.Pool, closePool func()) {
	t.Helper()
	m, err := config.Parse("tools.yaml", []byte(toolsYAML))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err = pool.New(m, pool.Options{Workspace: workspace, Store: st})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	var once sync.Once
	closePool = func() { once.Do(func() { p.Close() }) }
	t.Cleanup(closePool)
	return p, closePool
}

// toolParts are the tool parts of a session's messages, by call id, as
// {tool, status, input, title, output, metadata} (no ids nor times).
func toolParts(t *testing.T, base, sid string) map[string]any {
	t.Helper()
	msgs := mustCall(t, 200, "GET", base+"/session/"+sid+"/message", "")
	mustMatchResponse(t, "get", "/session/{sessionID}/message", "200", msgs)
	out := map[string]any{}
	for _, m := range arr(msgs) {
		for _, p := range arr(get(m, "parts")) {
			if get(p, "type") == "tool" {
				out[str(get(p, "callID"))] = toolShape(p)
			}
		}
	}
	return out
}

func toolShape(p any) map[string]any {
	st := obj(get(p, "state"))
	return map[string]any{"tool": get(p, "tool"), "status": st["status"], "input": st["input"], "title": st["title"],
		"output": st["output"], "metadata": st["metadata"]}
}

// TestBuiltinToolsAsOpenCodeTools runs the builtin tools in a workspace
// and checks that the bus and the message history show them as
// OpenCode's own tools (names, input fields, titles, metadata), that the
// todo list is published and served, and that a restarted server shows
// the same from the store.
func TestBuiltinToolsAsOpenCodeTools(t *testing.T) {
	noLeaks(t)
	ws := t.TempDir()
	db := filepath.Join(t.TempDir(), "sessions.db")
	p, closePool := toolsPool(t, ws, db)
	s, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")

	root := createSession(t, base, "")
	rid := str(root["id"])
	nf := mustCall(t, 404, "GET", base+"/session/ses_00000000000000nosuchsession/todo", "")
	mustMatchResponse(t, "get", "/session/{sessionID}/todo", "404", nf)
	if got := arr(mustCall(t, 200, "GET", base+"/session/"+rid+"/todo", "")); got == nil || len(got) != 0 {
		t.Fatalf("todo of a new session: %v, want []", got)
	}
	ans := mustCall(t, 200, "POST", base+"/session/"+rid+"/message", promptBody("Tidy the notes"))
	if textOf(arr(get(ans, "parts"))) != "The notes are tidy." {
		t.Fatalf("answer %v", ans)
	}
	ev.wait(isType("session.idle", rid), 10*time.Second)
	evs := ev.events()
	checkEvents(t, evs)

	// GET /session/{id}/diff: the file the session wrote and then edited,
	// as one patch from nothing to its final text.
	diffs := arr(mustCall(t, 200, "GET", base+"/session/"+rid+"/diff", ""))
	if len(diffs) != 1 {
		t.Fatalf("session diff: %v, want one file", diffs)
	}
	d := obj(diffs[0])
	if !strings.HasSuffix(str(d["file"]), "notes/today.md") || d["status"] != "added" || d["additions"] != float64(5) || d["deletions"] != float64(0) ||
		!strings.Contains(str(d["patch"]), "+- fix the typo\n") || strings.Contains(str(d["patch"]), "tpyo") {
		t.Fatalf("session diff: %v", d)
	}

	// The live tool parts, by call id, in the order they started.
	live := map[string]any{}
	var order []string
	var todoEvents []map[string]any
	for _, e := range evs {
		switch e["type"] {
		case "message.part.updated":
			part := get(e, "properties", "part")
			if get(part, "type") != "tool" {
				continue
			}
			id := str(get(part, "callID"))
			if _, seen := live[id]; !seen {
				order = append(order, id)
			}
			live[id] = toolShape(part)
		case "todo.updated":
			todoEvents = append(todoEvents, e)
		}
	}
	var names []string
	for _, id := range order {
		names = append(names, str(get(live[id], "tool")))
		if st := get(live[id], "status"); st != "completed" {
			t.Errorf("%s ended %v: %v", id, st, live[id])
		}
	}
	if got, want := strings.Join(names, ","), "todowrite,write,read,glob,grep,edit,list,bash,todowrite"; got != want {
		t.Fatalf("tools %s, want %s", got, want)
	}
	byName := func(name string, nth int) map[string]any {
		for _, id := range order {
			if get(live[id], "tool") == name {
				if nth == 0 {
					return obj(live[id])
				}
				nth--
			}
		}
		t.Fatalf("no %s part", name)
		return nil
	}

	// Inputs use OpenCode's field names; titles are OpenCode's.
	wantInput := map[string]map[string]any{
		"write": {"filePath": "notes/today.md", "content": "# Today\n\n- ship the tools\n- fix the tpyo\n- write the docs\n"},
		"read":  {"filePath": "notes/today.md", "limit": 10.0},
		"glob":  {"pattern": "**/*.md"},
		"grep":  {"pattern": "tpyo", "path": ".", "include": "*.md", "output_mode": "content", "-n": true},
		"edit":  {"filePath": "notes/today.md", "oldString": "tpyo", "newString": "typo"},
		"list":  {"path": "notes"},
		"bash":  {"command": "grep -c typo notes/today.md; exit 3", "description": "Count the typos"},
	}
	wantTitle := map[string]string{"write": "notes/today.md", "read": "notes/today.md", "glob": "**/*.md", "grep": "tpyo",
		"edit": "notes/today.md", "list": "notes", "bash": "Count the typos"}
	for name, want := range wantInput {
		part := byName(name, 0)
		if !reflect.DeepEqual(part["input"], any(want)) {
			t.Errorf("%s input %v, want %v", name, part["input"], want)
		}
		if part["title"] != wantTitle[name] {
			t.Errorf("%s title %v, want %q", name, part["title"], wantTitle[name])
		}
	}
	todo1 := byName("todowrite", 0)
	if todo1["title"] != "2 todos" || get(todo1, "input", "todos") == nil ||
		!reflect.DeepEqual(get(todo1, "metadata", "todos"), []any{
			map[string]any{"content": "Write the notes", "status": "in_progress", "priority": "medium"},
			map[string]any{"content": "Fix the typo", "status": "pending", "priority": "medium"},
		}) {
		t.Errorf("todowrite %v", todo1)
	}
	for _, td := range arr(get(todo1, "input", "todos")) {
		if get(td, "priority") != "medium" || get(td, "content") == nil || get(td, "status") == nil {
			t.Errorf("todowrite input item %v", td)
		}
	}

	// Metadata: what OpenCode's renderers read.
	edit := byName("edit", 0)
	diff := str(get(edit, "metadata", "diff"))
	if !strings.Contains(diff, "@@ -1,5 +1,5 @@\n") || !strings.Contains(diff, "\n-- fix the tpyo\n+- fix the typo\n") ||
		!strings.HasPrefix(diff, "Index: /") || !strings.Contains(diff, "notes/today.md\n===") {
		t.Errorf("edit diff:\n%s", diff)
	}
	if fd := obj(get(edit, "metadata", "filediff")); fd["additions"] != 1.0 || fd["deletions"] != 1.0 || fd["status"] != "modified" ||
		!strings.Contains(str(fd["before"]), "tpyo") || !strings.Contains(str(fd["after"]), "typo") || fd["patch"] != diff {
		t.Errorf("edit filediff %v", fd)
	}
	write := byName("write", 0)
	if !strings.Contains(str(get(write, "metadata", "diff")), "@@ -0,0 +1,5 @@\n+# Today\n") || get(write, "metadata", "exists") != false ||
		get(write, "metadata", "diagnostics") == nil {
		t.Errorf("write metadata %v", get(write, "metadata"))
	}
	bash := byName("bash", 0)
	if get(bash, "metadata", "exit") != 3.0 || get(bash, "metadata", "output") != "1" || get(bash, "metadata", "description") != "Count the typos" ||
		!strings.HasSuffix(str(bash["output"]), "Exit code: 3") {
		t.Errorf("bash %v", bash)
	}
	if read := byName("read", 0); get(read, "metadata", "preview") != "# Today\n\n- ship the tools\n- fix the tpyo\n- write the docs" ||
		!strings.Contains(str(read["output"]), "\t- fix the tpyo") {
		t.Errorf("read %v", read)
	}
	if g := byName("grep", 0); get(g, "metadata", "matches") != 1.0 || get(g, "metadata", "truncated") != false {
		t.Errorf("grep %v", g)
	}
	if g := byName("glob", 0); get(g, "metadata", "count") != 1.0 {
		t.Errorf("glob %v", g)
	}

	// todo.updated for each TodoWrite; GET /todo serves the latest.
	if len(todoEvents) != 2 || get(todoEvents[1], "properties", "sessionID") != rid {
		t.Fatalf("todo.updated events %v", todoEvents)
	}
	wantTodos := []any{
		map[string]any{"content": "Write the notes", "status": "completed", "priority": "medium"},
		map[string]any{"content": "Fix the typo", "status": "completed", "priority": "medium"},
	}
	if got := get(todoEvents[1], "properties", "todos"); !reflect.DeepEqual(got, any(wantTodos)) {
		t.Fatalf("todo.updated %v", got)
	}
	todos := mustCall(t, 200, "GET", base+"/session/"+rid+"/todo", "")
	mustMatchResponse(t, "get", "/session/{sessionID}/todo", "200", todos)
	if !reflect.DeepEqual(todos, any(wantTodos)) {
		t.Fatalf("GET todo %v", todos)
	}

	// The history shows the same parts; so does a restarted server, from
	// the store.
	if hist := toolParts(t, base, rid); !reflect.DeepEqual(hist, live) {
		t.Fatalf("history differs from the bus:\nhistory %v\nlive    %v", hist, live)
	}
	golden(t, "tools_parts.golden", ws, order, live)
	s.Close()
	closePool()

	p2, _ := toolsPool(t, ws, db)
	_, base2 := newServer(t, p2, Options{})
	if hist := toolParts(t, base2, rid); !reflect.DeepEqual(hist, live) {
		t.Fatalf("stored history differs from the bus:\nhistory %v\nlive    %v", hist, live)
	}
	if got := mustCall(t, 200, "GET", base2+"/session/"+rid+"/todo", ""); !reflect.DeepEqual(got, any(wantTodos)) {
		t.Fatalf("GET todo after a restart %v", got)
	}
}

// golden compares the tool parts (in order, the workspace path replaced)
// with testdata/name; -update rewrites it.
func golden(t *testing.T, name, ws string, order []string, parts map[string]any) {
	t.Helper()
	list := make([]any, len(order))
	for i, id := range order {
		list[i] = parts[id]
	}
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		got = strings.ReplaceAll(got, real, "$WORKSPACE")
	}
	got = strings.ReplaceAll(got, ws, "$WORKSPACE") + "\n"
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("tool parts differ from %s (go test -update rewrites it):\n%s", path, got)
	}
}

// TestToolMapping: the table's edge cases, on single calls.
func TestToolMapping(t *testing.T) {
	view := func(c *toolCall, raw string) (toolView, map[string]any) {
		v := viewTool("/ws", c, json.RawMessage(raw))
		var in map[string]any
		if err := json.Unmarshal(v.input, &in); err != nil {
			t.Fatal(err)
		}
		return v, in
	}
	// Unknown tools (MCP, BashOutput) keep name, input, title, metadata.
	for _, name := range []string{"mcp__github__search_issues", "BashOutput", "KillShell"} {
		raw := `{"query":"x","b":2}`
		v, _ := view(&toolCall{name: name, title: "T", done: true, meta: map[string]any{"server": "github"}}, raw)
		if v.tool != name || string(v.input) != raw || v.title != "T" || v.meta["server"] != "github" {
			t.Errorf("%s: %+v", name, v)
		}
	}
	// A call refused before the tool reported: no metadata.
	if v, in := view(&toolCall{name: "Read", done: true, isError: true, output: "Access denied"}, `{"file_path":"/etc/hostname"}`); v.meta != nil || in["filePath"] != "/etc/hostname" || v.title != "/etc/hostname" {
		t.Errorf("refused read: %+v", v)
	}
	// Bash killed at its timeout: exit unknown, output without the exit line.
	v, in := view(&toolCall{name: "Bash", done: true, isError: true, output: "partial\nCommand killed after timeout of 10 ms.\nExit code: -1",
		meta: map[string]any{"exit_code": -1, "timed_out": true}}, `{"command":"sleep 9","timeout":10,"run_in_background":false}`)
	if v.title != "sleep 9" || v.meta["exit"] != nil || v.meta["output"] != "partial\nCommand killed after timeout of 10 ms." ||
		in["timeout"] != 10.0 || in["run_in_background"] != false {
		t.Errorf("bash: %+v %v", v, in)
	}
	// WebFetch: format named; title with the content type.
	v, in = view(&toolCall{name: "WebFetch", done: true, meta: map[string]any{"content_type": "text/html"}}, `{"url":"https://x.test/","prompt":"p"}`)
	if v.tool != "webfetch" || in["format"] != "markdown" || in["prompt"] != "p" || v.title != "https://x.test/ (text/html)" {
		t.Errorf("webfetch: %+v %v", v, in)
	}
	// Edit with replace_all, a path outside the workspace; a running call
	// has no metadata yet.
	v, in = view(&toolCall{name: "Edit", locations: []event.Location{{Path: "/elsewhere/f.go"}}}, `{"file_path":"/elsewhere/f.go","old_string":"a","new_string":"b","replace_all":true}`)
	if v.tool != "edit" || in["replaceAll"] != true || in["oldString"] != "a" || v.title != "/elsewhere/f.go" || v.meta != nil {
		t.Errorf("edit: %+v %v", v, in)
	}
	// LS of the root; a pending call's empty input.
	if v, _ := view(&toolCall{name: "LS", locations: []event.Location{{Path: "/ws"}}}, `{}`); v.title != "." || v.tool != "list" {
		t.Errorf("list: %+v", v)
	}
	if v, _ := view(&toolCall{name: "TodoWrite", title: "Update the todo list"}, `{}`); string(v.input) != "{}" || v.tool != "todowrite" || v.meta != nil {
		t.Errorf("pending todowrite: %+v", v)
	}
}
