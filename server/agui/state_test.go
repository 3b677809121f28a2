package agui

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/server/internal/servertest"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

// applyPatch applies an RFC 6902 patch (add, remove, replace, test) to a
// decoded JSON document, as a client does with STATE_DELTA.
func applyPatch(doc any, ops []any) (any, error) {
	for i, o := range ops {
		op, _ := o.(map[string]any)
		path, _ := op["path"].(string)
		var err error
		doc, err = applyOp(doc, op["op"], path, op["value"])
		if err != nil {
			return nil, fmt.Errorf("op %d %v: %w", i, o, err)
		}
	}
	return doc, nil
}

func applyOp(doc any, op any, path string, value any) (any, error) {
	if path == "" {
		switch op {
		case "add", "replace":
			return value, nil
		case "test":
			if !reflect.DeepEqual(doc, value) {
				return nil, fmt.Errorf("test failed")
			}
			return doc, nil
		}
		return nil, fmt.Errorf("cannot %v the whole document", op)
	}
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("bad pointer %q", path)
	}
	toks := strings.Split(path[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	var walk func(cur any, toks []string) (any, error)
	walk = func(cur any, toks []string) (any, error) {
		last := len(toks) == 1
		switch c := cur.(type) {
		case map[string]any:
			k := toks[0]
			_, exists := c[k]
			if !last {
				if !exists {
					return nil, fmt.Errorf("no member %q", k)
				}
				v, err := walk(c[k], toks[1:])
				if err != nil {
					return nil, err
				}
				c[k] = v
				return c, nil
			}
			switch op {
			case "add":
				c[k] = value
			case "replace", "remove", "test":
				if !exists {
					return nil, fmt.Errorf("no member %q to %v", k, op)
				}
				switch op {
				case "replace":
					c[k] = value
				case "remove":
					delete(c, k)
				case "test":
					if !reflect.DeepEqual(c[k], value) {
						return nil, fmt.Errorf("test failed at %q", k)
					}
				}
			default:
				return nil, fmt.Errorf("unsupported op %v", op)
			}
			return c, nil
		case []any:
			n := len(c)
			if toks[0] == "-" && last && op == "add" {
				return append(c, value), nil
			}
			idx, err := strconv.Atoi(toks[0])
			if err != nil || idx < 0 || idx > n || (idx == n && !(last && op == "add")) {
				return nil, fmt.Errorf("bad index %q for %d elements", toks[0], n)
			}
			if !last {
				v, err := walk(c[idx], toks[1:])
				if err != nil {
					return nil, err
				}
				c[idx] = v
				return c, nil
			}
			switch op {
			case "add":
				c = append(c[:idx], append([]any{value}, c[idx:]...)...)
			case "replace":
				c[idx] = value
			case "remove":
				c = append(c[:idx], c[idx+1:]...)
			case "test":
				if !reflect.DeepEqual(c[idx], value) {
					return nil, fmt.Errorf("test failed at %d", idx)
				}
			default:
				return nil, fmt.Errorf("unsupported op %v", op)
			}
			return c, nil
		}
		return nil, fmt.Errorf("cannot descend into %T", cur)
	}
	return walk(doc, toks)
}

// decode decodes JSON the way parseSSE does not: plain float64 numbers, so
// that documents compare with reflect.DeepEqual.
func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// plainEvents re-decodes parsed events without json.Number.
func plainEvents(t *testing.T, evs []ev) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(evs))
	for i, e := range evs {
		b, _ := json.Marshal(e)
		out[i] = decode(t, b).(map[string]any)
	}
	return out
}

// clientState follows the state events of a stream as @ag-ui/client does,
// starting from the state the client sent; it returns the final state and
// the state events seen.
func clientState(t *testing.T, start any, evs []map[string]any) (any, []map[string]any) {
	t.Helper()
	state := start
	var seen []map[string]any
	for _, e := range evs {
		switch e["type"] {
		case wire.TypeStateSnapshot:
			b, _ := json.Marshal(e["snapshot"]) // a copy: patches change it in place
			state = decode(t, b)
		case wire.TypeStateDelta:
			ops, ok := e["delta"].([]any)
			if !ok {
				t.Fatalf("STATE_DELTA without a patch array: %v", e)
			}
			var err error
			if state, err = applyPatch(state, ops); err != nil {
				t.Fatalf("STATE_DELTA %v does not apply to %v: %v", e["delta"], state, err)
			}
		default:
			continue
		}
		seen = append(seen, e)
	}
	return state, seen
}

func todosJSON(t *testing.T, items []wire.TodoItem) any {
	t.Helper()
	b, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, b)
}

var (
	plan1 = event.PlanUpdate{Entries: []event.PlanEntry{
		{Content: "Write the notes", Priority: "medium", Status: "in_progress", ActiveForm: "Writing the notes"},
		{Content: "Read them back", Priority: "medium", Status: "pending", ActiveForm: "Reading them back"},
	}}
	plan2 = event.PlanUpdate{Entries: []event.PlanEntry{
		{Content: "Write the notes", Priority: "medium", Status: "completed", ActiveForm: "Writing the notes"},
		{Content: "Read them back", Priority: "medium", Status: "completed", ActiveForm: "Reading them back"},
		{Content: "Report", Priority: "high", Status: "in_progress"},
	}}
)

// toolsStream is a root run that keeps a todo list (twice), writes and
// reads a file, and has a child that keeps its own list.
func toolsStream() []event.Event {
	c := func(e event.Event) event.Event { return wrap([]string{child}, "checker", e) }
	old := "old\n"
	call := func(idx int, id, name, args string) []event.Event {
		return []event.Event{
			event.PartStart{Index: idx, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: id, ToolName: name}},
			event.PartDelta{Index: idx, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: args, ToolCallID: id}},
			event.PartEnd{Index: idx},
			event.ToolCallStart{ToolCallID: id, ToolName: name, Title: name, ToolKind: "edit", RawInput: json.RawMessage(args)},
		}
	}
	var evs []event.Event
	evs = append(evs, event.RunStarted{SessionID: root, RunID: "run_a", AgentName: "editor"})
	evs = append(evs, call(0, "cal_1", "TodoWrite", `{"todos":[]}`)...)
	evs = append(evs, plan1,
		event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "TodoWrite", ToolInput: json.RawMessage(`{}`),
			ToolResult: "Todo list updated: 2 items (0 completed, 1 in progress, 1 pending).", AgentName: "editor",
			Metadata: map[string]any{"todos": []any{}}})
	evs = append(evs, call(0, "cal_2", "Write", `{"file_path":"notes.md","content":"new\n"}`)...)
	evs = append(evs, event.ToolCallComplete{ToolCallID: "cal_2", ToolName: "Write", ToolInput: json.RawMessage(`{}`),
		ToolResult: "Overwrote /ws/notes.md (1 line, 4 bytes).", AgentName: "editor",
		Locations: []event.Location{{Path: "/ws/notes.md"}},
		Diffs: []event.FileDiff{{Path: "/ws/notes.md", OldText: &old, NewText: "new\n"},
			{Path: "/ws/big.bin", NewText: strings.Repeat("x", maxResultDiffBytes)}},
		Metadata: map[string]any{"created": false, "lines": 1, "bytes": 4}})
	evs = append(evs, call(0, "cal_3", "Read", `{"file_path":"notes.md"}`)...)
	evs = append(evs, event.ToolCallComplete{ToolCallID: "cal_3", ToolName: "Read", ToolInput: json.RawMessage(`{}`),
		ToolResult: "     1\tnew\n", AgentName: "editor", Locations: []event.Location{{Path: "/ws/notes.md", Line: 1}}})
	evs = append(evs, call(0, "cal_4", "task", `{"agent_or_team":"checker"}`)...)
	evs = append(evs,
		event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: root, ToolCallID: "cal_4", SourceName: "checker",
			SourceType: event.SourceAgent, Depth: 1, RunMode: event.RunModeSync},
		c(event.PlanUpdate{Entries: []event.PlanEntry{{Content: "Check", Priority: "medium", Status: "in_progress"}}}),
		c(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Fine."}}),
		event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: root, ToolCallID: "cal_4", SourceName: "checker",
			Depth: 1, StopReason: event.StopCompleted, LastAssistantMessage: "Fine."},
		event.ToolCallComplete{ToolCallID: "cal_4", ToolName: "task", ToolInput: json.RawMessage(`{}`), ToolResult: "Fine.", AgentName: "editor"},
	)
	evs = append(evs, call(0, "cal_5", "TodoWrite", `{"todos":[]}`)...)
	evs = append(evs, plan2, plan2, // the same list again changes nothing
		event.ToolCallComplete{ToolCallID: "cal_5", ToolName: "TodoWrite", ToolInput: json.RawMessage(`{}`),
			ToolResult: "Todo list updated.", AgentName: "editor", IsError: false},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText, Content: "Done."}},
		event.PartEnd{Index: 0},
		event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Done."}},
	)
	return evs
}

func TestGoldenState(t *testing.T) {
	m, items := fixedMapper("")
	for _, e := range toolsStream() {
		m.Map(e)
	}
	m.Finish(pool.RunResult{SessionID: root, Result: spawn.Result{Output: "Done.", StopReason: event.StopCompleted}})
	got := encodeItems(*items)
	golden(t, "state.sse", got)
	raw := parseSSE(t, got)
	verifyStream(t, raw, root)
	evs := plainEvents(t, raw)

	final, states := clientState(t, map[string]any{}, evs)
	if len(states) != 2 || states[0]["type"] != wire.TypeStateSnapshot || states[1]["type"] != wire.TypeStateDelta {
		t.Fatalf("state events %v, want a STATE_SNAPSHOT then one STATE_DELTA", states)
	}
	if want := map[string]any{"todos": todosJSON(t, todosOf(plan1))}; !reflect.DeepEqual(states[0]["snapshot"], want) {
		t.Errorf("snapshot %v, want %v", states[0]["snapshot"], want)
	}
	if want := map[string]any{"todos": todosJSON(t, todosOf(plan2))}; !reflect.DeepEqual(final, want) {
		t.Errorf("state after the delta %v, want %v", final, want)
	}
	// Per-field ops, not a whole new list.
	if ops := states[1]["delta"].([]any); len(ops) != 3 {
		t.Errorf("delta %v, want 3 ops (two statuses, one added entry)", ops)
	}
	for _, e := range evs {
		switch {
		case e["type"] == wire.TypeStateSnapshot || e["type"] == wire.TypeStateDelta:
			if e["subagentRunId"] != nil {
				t.Errorf("state event attributed to a subagent: %v", e)
			}
		case e["type"] == wire.TypeCustom && e["name"] == "plan_update":
			if e["subagentRunId"] != child {
				t.Errorf("root plan_update as CUSTOM, or a child's without its subagent: %v", e)
			}
		case e["type"] == wire.TypeToolCallResult:
			md, _ := e["metadata"].(map[string]any)
			switch e["toolCallId"] {
			case "cal_2":
				ap := md[MetadataKey].(map[string]any)
				diffs := ap["diffs"].([]any)
				if e["content"] != "Overwrote /ws/notes.md (1 line, 4 bytes)." || len(diffs) != 1 || ap["diffs_omitted"] != 1.0 ||
					diffs[0].(map[string]any)["old_text"] != "old\n" || ap["metadata"].(map[string]any)["lines"] != 1.0 {
					t.Errorf("Write result %v", e)
				}
			case "cal_3":
				if e["content"] != "     1\tnew\n" || md == nil {
					t.Errorf("Read result %v", e)
				}
			case "cal_4":
				if md != nil {
					t.Errorf("a result with nothing for front ends has metadata: %v", e)
				}
			}
		}
	}
}

func TestStateWithClientState(t *testing.T) {
	stored := todosOf(plan1)
	for _, tc := range []struct {
		name   string
		input  string // RunAgentInput.state
		stored bool   // the thread has a list from earlier runs
		start  string // the snapshot that opens the run, "" for none
		final  string // the client's state at the end
		n      int    // state events
	}{
		{name: "none", final: `{"todos":[]}`, n: 3},
		{name: "empty object", input: "{}", final: `{"todos":[]}`, n: 3},
		{name: "client keys", input: `{"theme":"dark"}`, start: `{"theme":"dark"}`, final: `{"theme":"dark","todos":[]}`, n: 4},
		{name: "client todos", input: `{"todos":"mine","n":null}`, start: `{"todos":"mine","n":null}`, final: `{"todos":[],"n":null}`, n: 4},
		{name: "not an object", input: `[1,2]`, start: `[1,2]`, final: `{"todos":[]}`, n: 4},
		{name: "stored", stored: true, start: `{"todos":"STORED"}`, final: `{"todos":[]}`, n: 4},
		{name: "stored and client keys", input: `{"theme":"dark","todos":[{"content":"stale"}]}`, stored: true,
			start: `{"theme":"dark","todos":"STORED"}`, final: `{"theme":"dark","todos":[]}`, n: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, items := fixedMapper(tc.input)
			if tc.stored {
				m.cfg.Todos, m.cfg.HasTodos = stored, true
			}
			m.Map(event.RunStarted{SessionID: root})
			m.Map(plan2)
			m.Map(plan1)
			m.Map(event.PlanUpdate{})
			m.Finish(pool.RunResult{Result: spawn.Result{StopReason: event.StopCompleted}})
			raw := parseSSE(t, encodeItems(*items))
			verifyStream(t, raw, root)
			evs := plainEvents(t, raw)
			first := evs[1]
			if tc.start == "" {
				if want := map[string]any{"todos": todosJSON(t, todosOf(plan2))}; first["type"] != wire.TypeStateSnapshot || !reflect.DeepEqual(first["snapshot"], want) {
					t.Fatalf("no state at the start: the first list is a snapshot, got %v", first)
				}
			} else {
				want := decode(t, []byte(tc.start))
				if tc.stored {
					want.(map[string]any)["todos"] = todosJSON(t, stored)
				}
				if first["type"] != wire.TypeStateSnapshot || !reflect.DeepEqual(first["snapshot"], want) {
					t.Fatalf("opening snapshot %v, want %v", first, want)
				}
			}
			var before any = map[string]any{}
			if tc.input != "" {
				before = decode(t, []byte(tc.input))
			}
			final, states := clientState(t, before, evs)
			if want := decode(t, []byte(tc.final)); !reflect.DeepEqual(final, want) {
				t.Fatalf("final state %v, want %v (events %v)", final, want, states)
			}
			if len(states) != tc.n {
				t.Errorf("%d state events, want %d: %v", len(states), tc.n, states)
			}
		})
	}
}

// TestDiffTodos: applying the patch to the old state gives the new one,
// for random lists; an unchanged list gives no patch.
func TestDiffTodos(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	list := func() []wire.TodoItem {
		out := make([]wire.TodoItem, r.IntN(6))
		for i := range out {
			out[i] = wire.TodoItem{Content: pick("a", "b", "c/d", "e~f"), Status: pick("pending", "in_progress", "completed"),
				Priority: pick("medium", "high"), ActiveForm: pick("", "doing a", "doing b")}
		}
		return out
	}
	for i := range 2000 {
		old, new := list(), list()
		st := runState{input: json.RawMessage(`{"keep":[1,{"x":null}]}`)}
		st.update(old)
		e := st.update(new)
		doc := map[string]any{"keep": decode(t, []byte(`[1,{"x":null}]`)), "todos": todosJSON(t, old)}
		if e == nil {
			if !reflect.DeepEqual(old, new) && !(len(old) == 0 && len(new) == 0) {
				t.Fatalf("case %d: no patch for %v -> %v", i, old, new)
			}
			continue
		}
		if e.Type != wire.TypeStateDelta {
			t.Fatalf("case %d: %s, want STATE_DELTA", i, e.Type)
		}
		got, err := applyPatch(doc, decode(t, e.Patch).([]any))
		if err != nil {
			t.Fatalf("case %d: %v -> %v: %s: %v", i, old, new, e.Patch, err)
		}
		want := map[string]any{"keep": decode(t, []byte(`[1,{"x":null}]`)), "todos": todosJSON(t, new)}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: %s turns %v into %v, want %v", i, e.Patch, old, got, want)
		}
	}
	// A one-field change is one op; a list shifted at the front is one
	// replacement of the whole list.
	a := []wire.TodoItem{{Content: "a", Status: "pending", Priority: "medium"}, {Content: "b", Status: "pending", Priority: "medium"}}
	b := []wire.TodoItem{a[0], {Content: "b", Status: "completed", Priority: "medium"}}
	if ops := diffTodos(a, b); len(ops) != 1 || !reflect.DeepEqual(ops[0], patchOp{Op: "replace", Path: "/todos/1/status", Value: json.RawMessage(`"completed"`)}) {
		t.Errorf("one status: %+v", ops)
	}
	a = []wire.TodoItem{{Content: "a", Status: "pending", Priority: "medium", ActiveForm: "doing a"},
		{Content: "b", Status: "completed", Priority: "high"}}
	c := []wire.TodoItem{{Content: "new first", Status: "in_progress", Priority: "low"}, a[0], a[1]}
	if ops := diffTodos(a, c); len(ops) != 1 || ops[0].Op != "replace" || ops[0].Path != "/todos" {
		t.Errorf("shifted list: %+v", ops)
	}
}

// toolsYAML: an editor that keeps a todo list while it writes and reads a
// file in the workspace.
const toolsYAML = `
default_agent: editor
agents:
  editor:
    tools: [file_access, plan]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
        - tool_calls:
            - name: TodoWrite
              args:
                todos:
                  - {content: Write the notes, status: in_progress, activeForm: Writing the notes}
                  - {content: Read them back, status: pending, activeForm: Reading them back}
        - tool_calls:
            - name: Write
              args: {file_path: notes/today.md, content: "# Today\n\n- ship the tools\n"}
        - tool_calls:
            - name: Read
              args: {file_path: notes/today.md}
        - tool_calls:
            - name: TodoWrite
              args:
                todos:
                  - {content: Write the notes, status: completed, activeForm: Writing the notes}
                  - {content: Read them back, status: completed, activeForm: Reading them back}
                  - {content: Report, status: in_progress}
        - text: "The notes are written and read back."
`

func wantTodos(statuses ...string) []any {
	items := []wire.TodoItem{
		{Content: "Write the notes", Status: statuses[0], Priority: "medium", ActiveForm: "Writing the notes"},
		{Content: "Read them back", Status: statuses[1], Priority: "medium", ActiveForm: "Reading them back"},
	}
	if len(statuses) > 2 {
		items = append(items, wire.TodoItem{Content: "Report", Status: statuses[2], Priority: "medium"})
	}
	b, _ := json.Marshal(items)
	var v []any
	json.Unmarshal(b, &v)
	return v
}

// TestToolsRunState runs the builtin tools in a workspace: the todo list
// is the AG-UI state (a snapshot, then a delta); tool results are the
// tools' text; a later run on the thread, also after a restart, starts
// with the current list and keeps the client's own state.
func TestToolsRunState(t *testing.T) {
	dir := t.TempDir()
	p := servertest.PoolWith(t, toolsYAML, pool.Options{Workspace: dir})
	_, ts := newServer(t, p, Options{})

	body := func(run string, state any) string {
		b, _ := json.Marshal(map[string]any{"threadId": "thread-tools", "runId": run, "state": state,
			"messages": []any{map[string]any{"id": "m1", "role": "user", "content": "Tidy the notes"}}})
		return string(b)
	}
	raw := runOK(t, ts.URL+"/", body("run-1", map[string]any{}))
	verifyStream(t, raw, rootOf(t, p.Store(), "thread-tools").ID)
	evs := plainEvents(t, raw)
	final, states := clientState(t, map[string]any{}, evs)
	if len(states) != 2 || states[0]["type"] != wire.TypeStateSnapshot || states[1]["type"] != wire.TypeStateDelta {
		t.Fatalf("state events %v, want STATE_SNAPSHOT, STATE_DELTA", states)
	}
	if want := map[string]any{"todos": wantTodos("in_progress", "pending")}; !reflect.DeepEqual(states[0]["snapshot"], want) {
		t.Errorf("snapshot %v\nwant %v", states[0]["snapshot"], want)
	}
	last := map[string]any{"todos": wantTodos("completed", "completed", "in_progress")}
	if !reflect.DeepEqual(final, last) {
		t.Errorf("snapshot + delta = %v\nwant %v", final, last)
	}

	// Tool calls: names, and results that are the tools' text.
	names := map[string]string{} // toolCallId -> name
	results := map[string]map[string]any{}
	for _, e := range evs {
		switch e["type"] {
		case wire.TypeToolCallStart:
			names[e["toolCallId"].(string)] = e["toolCallName"].(string)
		case wire.TypeToolCallResult:
			results[names[e["toolCallId"].(string)]] = e
		}
	}
	file := filepath.Join(dir, "notes", "today.md")
	if got, err := os.ReadFile(file); err != nil || string(got) != "# Today\n\n- ship the tools\n" {
		t.Fatalf("the Write tool did not write in the workspace: %q %v", got, err)
	}
	w, r, todo := results["Write"], results["Read"], results["TodoWrite"]
	if w == nil || r == nil || todo == nil {
		t.Fatalf("results for %v", results)
	}
	if c := w["content"].(string); !strings.HasPrefix(c, "Created "+file) {
		t.Errorf("Write result %q", c)
	}
	if c := r["content"].(string); !strings.Contains(c, "- ship the tools") || strings.HasPrefix(c, "{") {
		t.Errorf("Read result %q: want the file's text", c)
	}
	if c := todo["content"].(string); !strings.HasPrefix(c, "Todo list updated") {
		t.Errorf("TodoWrite result %q", c)
	}
	wmd := w["metadata"].(map[string]any)[MetadataKey].(map[string]any)
	diff := wmd["diffs"].([]any)[0].(map[string]any)
	if diff["path"] != file || diff["new_text"] != "# Today\n\n- ship the tools\n" || diff["old_text"] != nil ||
		wmd["locations"].([]any)[0].(map[string]any)["path"] != file || wmd["metadata"].(map[string]any)["created"] != true {
		t.Errorf("Write metadata %v", wmd)
	}

	// The second run on the thread starts with the current list, merged
	// into the state the client sends.
	client := map[string]any{"theme": "dark", "todos": "stale"}
	raw = runOK(t, ts.URL+"/", body("run-2", client))
	verifyStream(t, raw, "")
	evs = plainEvents(t, raw)
	want := map[string]any{"theme": "dark", "todos": wantTodos("completed", "completed", "in_progress")}
	if evs[1]["type"] != wire.TypeStateSnapshot || !reflect.DeepEqual(evs[1]["snapshot"], want) {
		t.Fatalf("second run opens with %v\nwant the snapshot %v", evs[1], want)
	}
	final, states = clientState(t, client, evs)
	if len(states) != 3 || states[1]["type"] != wire.TypeStateDelta || states[2]["type"] != wire.TypeStateDelta {
		t.Fatalf("second run: state events %v, want a snapshot and two deltas", states)
	}
	if want["todos"] = last["todos"]; !reflect.DeepEqual(final, want) {
		t.Errorf("second run ends with %v, want %v", final, want)
	}

	// After a restart (a new server on the same store) the list comes from
	// the session's event log.
	_, ts2 := newServer(t, p, Options{})
	raw = runOK(t, ts2.URL+"/", body("run-3", nil))
	evs = plainEvents(t, raw)
	if want := last; evs[1]["type"] != wire.TypeStateSnapshot || !reflect.DeepEqual(evs[1]["snapshot"], want) {
		t.Fatalf("after a restart the run opens with %v, want the snapshot %v", evs[1], want)
	}

	// A new thread has no state until its agent writes a list: then one
	// snapshot, and deltas.
	raw = runOK(t, ts.URL+"/", strings.Replace(body("run-4", map[string]any{}), "thread-tools", "thread-other", 1))
	_, states = clientState(t, map[string]any{}, plainEvents(t, raw))
	if len(states) != 2 || states[0]["type"] != wire.TypeStateSnapshot || raw[1]["type"] == wire.TypeStateSnapshot {
		t.Fatalf("a new thread: state events %v", states)
	}
}
