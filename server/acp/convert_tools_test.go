package acp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentpool/agentpool/event"
)

func strp(s string) *string { return &s }

// toolStream is a root stream of builtin tool calls: a Read with a line,
// a Write of a new file and an Edit (diffs), a Grep whose locations only
// arrive with the result, a Bash that ran in a client terminal (attached
// while it ran), a Write whose result only repeats its diff, a failing
// Edit, a tool call whose result names other files than its start, and
// an external ACP agent's call announced with no input, which it names
// (with the file) only later: the last update carries them.
func toolStream(conv *converter) []func() {
	emit := func(e event.Event) func() { return func() { conv.Emit(e) } }
	const notes = "/ws/notes/today.md"
	return []func(){
		emit(event.RunStarted{SessionID: goldenRoot, RunID: "run_1", AgentName: "editor"}),
		emit(event.ToolCallStart{ToolCallID: "cal_w", ToolName: "Write", Title: "Write notes/today.md", ToolKind: "edit",
			RawInput: json.RawMessage(`{"file_path":"notes/today.md","content":"# Today\n- fix the tpyo\n"}`), Locations: []event.Location{{Path: notes}}}),
		emit(event.ToolCallComplete{ToolCallID: "cal_w", ToolName: "Write", AgentName: "editor",
			ToolInput:  json.RawMessage(`{"file_path":"notes/today.md","content":"# Today\n- fix the tpyo\n"}`),
			ToolResult: "Created " + notes + " (2 lines, 24 bytes).", Locations: []event.Location{{Path: notes}},
			Diffs: []event.FileDiff{{Path: notes, NewText: "# Today\n- fix the tpyo\n"}}}),
		emit(event.ToolCallStart{ToolCallID: "cal_r", ToolName: "Read", Title: "Read notes/today.md", ToolKind: "read",
			RawInput: json.RawMessage(`{"file_path":"notes/today.md","offset":2}`), Locations: []event.Location{{Path: notes, Line: 2}}}),
		emit(event.ToolCallComplete{ToolCallID: "cal_r", ToolName: "Read", AgentName: "editor", ToolInput: json.RawMessage(`{"file_path":"notes/today.md","offset":2}`),
			ToolResult: "     2\t- fix the tpyo", Locations: []event.Location{{Path: notes, Line: 2}}, Metadata: map[string]any{"lines": 1}}),
		emit(event.ToolCallStart{ToolCallID: "cal_g", ToolName: "Grep", Title: "Grep tpyo", ToolKind: "search", RawInput: json.RawMessage(`{"pattern":"tpyo"}`)}),
		emit(event.ToolCallComplete{ToolCallID: "cal_g", ToolName: "Grep", AgentName: "editor", ToolInput: json.RawMessage(`{"pattern":"tpyo"}`),
			ToolResult: notes + ":2:- fix the tpyo", Locations: []event.Location{{Path: notes, Line: 2}}}),
		emit(event.ToolCallStart{ToolCallID: "cal_e", ToolName: "Edit", Title: "Edit notes/today.md", ToolKind: "edit",
			RawInput: json.RawMessage(`{"file_path":"notes/today.md","old_string":"tpyo","new_string":"typo"}`), Locations: []event.Location{{Path: notes}}}),
		emit(event.ToolCallComplete{ToolCallID: "cal_e", ToolName: "Edit", AgentName: "editor",
			ToolInput:  json.RawMessage(`{"file_path":"notes/today.md","old_string":"tpyo","new_string":"typo"}`),
			ToolResult: "Edited " + notes + ": 1 replacement (first at line 2).", Locations: []event.Location{{Path: notes, Line: 2}},
			Diffs: []event.FileDiff{{Path: notes, OldText: strp("# Today\n- fix the tpyo\n"), NewText: "# Today\n- fix the typo\n"}}}),
		emit(event.ToolCallStart{ToolCallID: "cal_b", ToolName: "Bash", Title: "Count the lines", ToolKind: "execute",
			RawInput: json.RawMessage(`{"command":"wc -l notes/today.md","description":"Count the lines"}`)}),
		func() { conv.attachTerminal(goldenRoot, []string{"-c", "wc -l notes/today.md"}, "term_1") },
		emit(event.ToolCallComplete{ToolCallID: "cal_b", ToolName: "Bash", AgentName: "editor", ToolInput: json.RawMessage(`{"command":"wc -l notes/today.md"}`),
			ToolResult: "2 notes/today.md\n\nExit code: 0", Metadata: map[string]any{"exit_code": 0, "terminal_id": "term_1", "truncated": false}}),
		emit(event.ToolCallStart{ToolCallID: "cal_same", ToolName: "Write", Title: "Write a.txt", ToolKind: "edit",
			RawInput: json.RawMessage(`{"file_path":"a.txt","content":"x"}`), Locations: []event.Location{{Path: "/ws/a.txt"}}}),
		emit(event.ToolCallComplete{ToolCallID: "cal_same", ToolName: "Write", AgentName: "editor", ToolInput: json.RawMessage(`{"file_path":"a.txt","content":"x"}`),
			ToolResult: "x", Locations: []event.Location{{Path: "/ws/a.txt"}}, Diffs: []event.FileDiff{{Path: "/ws/a.txt", OldText: strp(""), NewText: "x"}}}),
		emit(event.ToolCallStart{ToolCallID: "cal_f", ToolName: "Edit", Title: "Edit b.txt", ToolKind: "edit",
			RawInput: json.RawMessage(`{"file_path":"b.txt","old_string":"a","new_string":"b"}`), Locations: []event.Location{{Path: "/ws/b.txt"}}}),
		emit(event.ToolCallComplete{ToolCallID: "cal_f", ToolName: "Edit", AgentName: "editor", IsError: true,
			ToolInput: json.RawMessage(`{"file_path":"b.txt","old_string":"a","new_string":"b"}`), ToolResult: "Read b.txt first."}),
		emit(event.ToolCallStart{ToolCallID: "cal_m", ToolName: "mcp__git__status", Title: "git: status", ToolKind: "bogus", RawInput: json.RawMessage(`{}`)}),
		emit(event.ToolCallComplete{ToolCallID: "cal_m", ToolName: "mcp__git__status", AgentName: "editor", ToolInput: json.RawMessage(`{}`),
			ToolResult: "clean", Metadata: map[string]any{"server": "git"}}),
		emit(event.ToolCallStart{ToolCallID: "cal_x", ToolName: "read", Title: "read", ToolKind: "read", RawInput: json.RawMessage(`{}`)}),
		emit(event.ToolCallProgress{ToolCallID: "cal_x", Status: event.StatusInProgress, Title: "read"}),
		emit(event.ToolCallComplete{ToolCallID: "cal_x", ToolName: "read", AgentName: "opencode", ToolInput: json.RawMessage(`{"filePath":"notes.md"}`),
			ToolResult: "Greet the team.", Locations: []event.Location{{Path: "notes.md"}}}),
		emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Done.", FinishReason: "stop"}}),
	}
}

func convertTools(t *testing.T, replay bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	conv := newConverter(goldenRoot, viewTree, func(sid string, u any) {
		b, err := json.Marshal(recordedUpdate(t, sid, u))
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}, nil)
	conv.noTerminals = replay
	for _, step := range toolStream(conv) {
		step()
	}
	conv.Finish(event.StopCompleted)
	return buf.Bytes()
}

func recordedUpdate(t *testing.T, sid string, u any) recorded {
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatalf("marshal update: %v", err)
	}
	return recorded{SessionID: sid, Update: b}
}

// TestConvertToolsGolden: kinds, locations (on the tool_call, and on the
// update when they differ or arrive late), diffs (oldText null for a new
// file; the text result left out when it only repeats the diff) and the
// client terminal (attached as it starts, embedded again at the end; not
// in a replay).
func TestConvertToolsGolden(t *testing.T) {
	for _, tc := range []struct {
		name   string
		replay bool
	}{{"live", false}, {"replay", true}} {
		t.Run(tc.name, func(t *testing.T) {
			got := convertTools(t, tc.replay)
			path := filepath.Join("testdata", "convert_tools_"+tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("updates differ from %s (go test -update rewrites it):\n%s", path, diffLines(string(want), string(got)))
			}
			var notes []note
			for line := range bytes.Lines(got) {
				var n note
				if err := json.Unmarshal(line, &n); err != nil {
					t.Fatal(err)
				}
				notes = append(notes, n)
			}
			checkUpdates(t, goldenRoot, notes, false)
		})
	}
}

// The content variants encode exactly the fields of their type.
func TestToolCallContentEncoding(t *testing.T) {
	for _, tc := range []struct {
		c    toolCallContent
		want string
	}{
		{textContent("hi"), `{"type":"content","content":{"type":"text","text":"hi"}}`},
		{diffContent("/a", nil, ""), `{"type":"diff","path":"/a","oldText":null,"newText":""}`},
		{diffContent("/a", strp("x"), "y"), `{"type":"diff","path":"/a","oldText":"x","newText":"y"}`},
		{terminalContent("t1"), `{"type":"terminal","terminalId":"t1"}`},
	} {
		b, err := json.Marshal(tc.c)
		if err != nil || string(b) != tc.want {
			t.Errorf("%+v: %s %v, want %s", tc.c, b, err, tc.want)
		}
		var back toolCallContent
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if b2, _ := json.Marshal(back); string(b2) != tc.want {
			t.Errorf("round trip: %s, want %s", b2, tc.want)
		}
	}
}
