package acp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentpool/agentpool/event"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const goldenRoot = "ses_root"

// wrapped builds a subagent event as the root stream carries it.
func wrapped(name string, depth int, child, parent string, path []string, e event.Event) event.Subagent {
	return event.Subagent{
		SourceName: name, SourceType: event.SourceAgent, Depth: depth,
		ChildSessionID: child, ParentSessionID: parent, Path: path, Event: e,
	}
}

// goldenStream is a fixed root stream: own text, thinking, a plan, tool
// calls, a child with a tool call and a grandchild, a failing async child,
// content of a child whose start is missing (reactive fallback), and a
// tool call that never completes.
func goldenStream() []event.Event {
	c1 := func(e event.Event) event.Event {
		return wrapped("researcher", 1, "ses_c1", goldenRoot, []string{"ses_c1"}, e)
	}
	g1 := func(e event.Event) event.Event {
		return wrapped("checker", 2, "ses_g1", "ses_c1", []string{"ses_c1", "ses_g1"}, e)
	}
	c2 := func(e event.Event) event.Event {
		return wrapped("broken", 1, "ses_c2", goldenRoot, []string{"ses_c2"}, e)
	}
	text := func(i int, s string) event.Event {
		return event.PartDelta{Index: i, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: s}}
	}
	return []event.Event{
		event.RunStarted{SessionID: goldenRoot, RunID: "run_1", AgentName: "lead"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartThinking}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartThinking, ContentDelta: "Let me plan."}},
		event.PartEnd{Index: 0},
		event.PartStart{Index: 1, Part: event.Part{PartKind: event.PartText}},
		text(1, "Working "),
		text(1, "on it."),
		event.PartEnd{Index: 1},
		event.PlanUpdate{Entries: []event.PlanEntry{
			{Content: "Research", Priority: "high", Status: "in_progress"},
			{Content: "Write", Priority: "urgent", Status: "someday"},
		}},
		event.PartStart{Index: 2, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_1", ToolName: "task"}},
		event.PartDelta{Index: 2, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: `{"agent_or_team":"researcher"}`, ToolCallID: "cal_1"}},
		event.PartEnd{Index: 2},
		event.ToolCallStart{ToolCallID: "cal_1", ToolName: "task", Title: "Research the topic", ToolKind: "other", RawInput: json.RawMessage(`{"agent_or_team": "researcher", "prompt": "Find facts"}`)},
		event.SpawnSessionStart{
			ChildSessionID: "ses_c1", ParentSessionID: goldenRoot, ToolCallID: "cal_1", SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: "researcher", SourceType: event.SourceAgent, Depth: 1,
			Description: "Research the topic", Metadata: map[string]any{"prompt": "Find facts", "max_depth": 5},
		},
		c1(event.RunStarted{SessionID: "ses_c1", RunID: "run_2", AgentName: "researcher", ParentSessionID: goldenRoot}),
		c1(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}),
		c1(text(0, "Found ")),
		c1(text(0, "facts.")),
		c1(event.PartEnd{Index: 0}),
		c1(event.ToolCallStart{ToolCallID: "cal_2", ToolName: "ask_checker", Title: "Ask checker", ToolKind: "other", RawInput: json.RawMessage(`{"prompt":"Check"}`)}),
		c1(event.SpawnSessionStart{
			ChildSessionID: "ses_g1", ParentSessionID: "ses_c1", ToolCallID: "cal_2", SpawnMechanism: event.MechanismWorker,
			RunMode: event.RunModeSync, SourceName: "checker", SourceType: event.SourceAgent, Depth: 2,
			Description: "ask checker", Metadata: map[string]any{"prompt": "Check", "max_depth": 5},
		}),
		g1(event.RunStarted{SessionID: "ses_g1", RunID: "run_3", AgentName: "checker", ParentSessionID: "ses_c1"}),
		g1(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}),
		g1(text(0, "Confirmed.")),
		g1(event.PartEnd{Index: 0}),
		g1(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Confirmed.", FinishReason: "stop"}}),
		c1(event.SpawnSessionEnd{
			ChildSessionID: "ses_g1", ParentSessionID: "ses_c1", ToolCallID: "cal_2", SourceName: "checker",
			SourceType: event.SourceAgent, Depth: 2, StopReason: event.StopCompleted, LastAssistantMessage: "Confirmed.", DurationMS: 3,
		}),
		c1(event.ToolCallComplete{ToolCallID: "cal_2", ToolName: "ask_checker", ToolInput: json.RawMessage(`{"prompt":"Check"}`), ToolResult: "Confirmed.", AgentName: "researcher"}),
		c1(event.ToolCallStart{ToolCallID: "cal_3", ToolName: "read_file", Title: "Read notes.md", ToolKind: "bogus", RawInput: json.RawMessage(`{"path":"notes.md"}`)}),
		c1(event.ToolCallComplete{ToolCallID: "cal_3", ToolName: "read_file", ToolResult: "no such file\nat /notes.md", IsError: true, AgentName: "researcher"}),
		c1(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Found facts.", FinishReason: "stop"}}),
		event.SpawnSessionEnd{
			ChildSessionID: "ses_c1", ParentSessionID: goldenRoot, ToolCallID: "cal_1", SourceName: "researcher",
			SourceType: event.SourceAgent, Depth: 1, StopReason: event.StopCompleted, LastAssistantMessage: "Found facts.",
			Usage: &event.Usage{InputTokens: 10, OutputTokens: 4}, DurationMS: 7,
		},
		event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "task", ToolResult: `{"output":"Found facts.","session_id":"ses_c1"}`, AgentName: "lead"},
		event.ToolCallStart{ToolCallID: "cal_4", ToolName: "task", Title: "Break", ToolKind: "other", RawInput: json.RawMessage(`{}`)},
		event.SpawnSessionStart{
			ChildSessionID: "ses_c2", ParentSessionID: goldenRoot, ToolCallID: "cal_4", SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeAsync, SourceName: "broken", SourceType: event.SourceAgent, Depth: 1, TaskID: "tsk_1",
			Metadata: map[string]any{"prompt": "Fail please", "max_depth": 5},
		},
		event.ToolCallComplete{ToolCallID: "cal_4", ToolName: "task", ToolResult: `{"task_id":"tsk_1","session_id":"ses_c2"}`, AgentName: "lead"},
		c2(event.RunStarted{SessionID: "ses_c2", RunID: "run_4", AgentName: "broken", ParentSessionID: goldenRoot}),
		c2(event.RunError{Message: "model test: upstream failed", Code: "model_error", RunID: "run_4", AgentName: "broken"}),
		event.SpawnSessionEnd{
			ChildSessionID: "ses_c2", ParentSessionID: goldenRoot, ToolCallID: "cal_4", SourceName: "broken",
			SourceType: event.SourceAgent, Depth: 1, StopReason: event.StopError, Error: "model test: upstream failed", DurationMS: 1,
		},
		wrapped("ghost", 1, "ses_c3", goldenRoot, []string{"ses_c3"}, text(0, "orphan text")),
		event.ToolCallStart{ToolCallID: "cal_5", ToolName: "shell", Title: "ls", ToolKind: "execute", RawInput: json.RawMessage(`{"cmd":"ls"}`)},
		event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Working on it.", FinishReason: "stop"}},
	}
}

type recorded struct {
	SessionID string          `json:"sessionId"`
	Update    json.RawMessage `json:"update"`
}

func convertGolden(t *testing.T, view spawnView) []recorded {
	t.Helper()
	var out []recorded
	conv := newConverter(goldenRoot, view, func(sid string, u any) {
		b, err := json.Marshal(u)
		if err != nil {
			t.Fatalf("marshal update: %v", err)
		}
		out = append(out, recorded{SessionID: sid, Update: b})
	}, nil)
	for _, e := range goldenStream() {
		conv.Emit(e)
	}
	conv.Finish(event.StopCompleted)
	return out
}

func TestConvertGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		view spawnView
	}{{"stable", viewTree}, {"subagents", viewSubagents}, {"flat", viewFlat}} {
		t.Run(tc.name, func(t *testing.T) {
			recs := convertGolden(t, tc.view)
			var buf bytes.Buffer
			for _, r := range recs {
				b, _ := json.Marshal(r)
				buf.Write(b)
				buf.WriteByte('\n')
			}
			path := filepath.Join("testdata", "convert_"+tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("updates differ from %s (go test -update rewrites it):\n%s", path, diffLines(string(want), buf.String()))
			}
			if tc.view == viewFlat {
				checkFlat(t, goldenRoot, toNotes(recs))
				return
			}
			checkUpdates(t, goldenRoot, toNotes(recs), tc.view == viewSubagents)
		})
	}
}

func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			b.WriteString("line " + itoa(i+1) + ":\n- " + a + "\n+ " + c + "\n")
		}
	}
	return b.String()
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// note is a decoded session/update notification.
type note struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		SessionUpdate string            `json:"sessionUpdate"`
		ToolCallID    string            `json:"toolCallId"`
		Title         string            `json:"title"`
		Kind          string            `json:"kind"`
		Status        string            `json:"status"`
		Content       json.RawMessage   `json:"content"`
		SessionID     string            `json:"sessionId"` // subagent_update
		State         *subagentState    `json:"state"`
		Meta          map[string]any    `json:"_meta"`
		Entries       []json.RawMessage `json:"entries"`
	} `json:"update"`
}

func toNotes(recs []recorded) []note {
	out := make([]note, len(recs))
	for i, r := range recs {
		b, _ := json.Marshal(r)
		_ = json.Unmarshal(b, &out[i])
	}
	return out
}

// checkUpdates checks the guarantees of the package documentation on a
// sequence of updates: a child's spawn tool call comes before anything of
// that child and is closed exactly once, nothing of it follows, every
// other tool call ends, kinds and statuses are valid ACP values; with
// subagents, the subagent_update (on the parent session) precedes the
// child's own updates and ends idle. It returns the closing status of each
// spawn tool call by child id.
func checkUpdates(t *testing.T, root string, notes []note, subagents bool) map[string]string {
	t.Helper()
	started := map[string]int{}
	closed := map[string]string{}
	announced := map[string]bool{} // subagent_update running seen
	idle := map[string]bool{}
	tools := map[string]string{} // session\x00id -> last status
	for i, n := range notes {
		u := n.Update
		if u.Kind != "" && !toolKinds[u.Kind] {
			t.Errorf("update %d: invalid tool kind %q", i, u.Kind)
		}
		if u.Status != "" && toolStatus(u.Status) == "" {
			t.Errorf("update %d: invalid status %q", i, u.Status)
		}
		if n.SessionID != root && !announced[n.SessionID] {
			t.Errorf("update %d (%s) on session %s before its subagent_update", i, u.SessionUpdate, n.SessionID)
		}
		if idle[n.SessionID] && u.SessionUpdate != updateSubagent {
			t.Errorf("update %d (%s) on session %s after it went idle", i, u.SessionUpdate, n.SessionID)
		}
		if child, ok := strings.CutPrefix(u.ToolCallID, spawnToolCallPrefix); ok {
			if n.SessionID != root {
				t.Errorf("update %d: spawn tool call %s on session %s, want the root", i, u.ToolCallID, n.SessionID)
			}
			switch u.SessionUpdate {
			case updateToolCall:
				if _, dup := started[child]; dup {
					t.Errorf("update %d: second spawn tool call for %s", i, child)
				}
				started[child] = i
				if u.Title == "" || !strings.HasPrefix(u.Title, "Spawned: ") || u.Kind != "other" || u.Status != statusInProgress {
					t.Errorf("update %d: spawn tool call %+v", i, u)
				}
				meta, _ := u.Meta["agentpool"].(map[string]any)
				if meta["type"] != "spawn_start" || meta["child_session_id"] != child || meta["parent_session_id"] == nil ||
					meta["spawn_mechanism"] == nil || meta["run_mode"] == nil || meta["source_type"] == nil || meta["depth"] == nil {
					t.Errorf("update %d: spawn _meta %v", i, u.Meta)
				}
				var content []toolCallContent
				if json.Unmarshal(u.Content, &content) != nil || len(content) == 0 || content[0].Content.Text == "" {
					t.Errorf("update %d: spawn tool call without a description block: %s", i, u.Content)
				}
			case updateToolCallUpdate:
				if _, ok := started[child]; !ok {
					t.Errorf("update %d: update of spawn tool call %s before it started", i, child)
				}
				if st, ok := closed[child]; ok {
					t.Errorf("update %d: update of spawn tool call %s after it closed (%s)", i, child, st)
				}
				if u.Status == statusCompleted || u.Status == statusFailed {
					closed[child] = u.Status
				}
			default:
				t.Errorf("update %d: %s with a spawn tool call id", i, u.SessionUpdate)
			}
			continue
		}
		switch u.SessionUpdate {
		case updateToolCall:
			tools[n.SessionID+"\x00"+u.ToolCallID] = u.Status
		case updateToolCallUpdate:
			key := n.SessionID + "\x00" + u.ToolCallID
			if _, ok := tools[key]; !ok {
				t.Errorf("update %d: tool_call_update of unknown tool call %s", i, u.ToolCallID)
			}
			if u.Status != "" {
				tools[key] = u.Status
			}
		case updateSubagent:
			if !subagents {
				t.Errorf("update %d: subagent_update for a client without subagents", i)
			}
			if _, ok := started[u.SessionID]; !ok {
				t.Errorf("update %d: subagent_update for %s before its spawn tool call", i, u.SessionID)
			}
			if u.State == nil {
				t.Errorf("update %d: subagent_update without state", i)
				continue
			}
			switch u.State.State {
			case "running":
				announced[u.SessionID] = true
			case "idle":
				if !announced[u.SessionID] {
					t.Errorf("update %d: idle before running for %s", i, u.SessionID)
				}
				idle[u.SessionID] = true
			}
		}
	}
	for child := range started {
		if _, ok := closed[child]; !ok {
			t.Errorf("spawn tool call for %s never closed", child)
		}
		if subagents && !idle[child] {
			t.Errorf("child %s never went idle", child)
		}
	}
	for key, st := range tools {
		if st != statusCompleted && st != statusFailed {
			t.Errorf("tool call %q left %q", strings.ReplaceAll(key, "\x00", "/"), st)
		}
	}
	return closed
}

func TestConvertClosesEverything(t *testing.T) {
	recs := convertGolden(t, viewTree)
	closed := checkUpdates(t, goldenRoot, toNotes(recs), false)
	want := map[string]string{"ses_c1": statusCompleted, "ses_g1": statusCompleted, "ses_c2": statusFailed, "ses_c3": statusFailed}
	for k, v := range want {
		if closed[k] != v {
			t.Errorf("spawn %s closed %q, want %q", k, closed[k], v)
		}
	}
}

func TestConvertTranscriptBounded(t *testing.T) {
	var last string
	conv := newConverter("r", viewTree, func(_ string, u any) {
		if tc, ok := u.(toolCallUpdate); ok && len(tc.Content) == 2 {
			last = tc.Content[1].Content.Text
		}
	}, nil)
	conv.Emit(event.SpawnSessionStart{ChildSessionID: "c", ParentSessionID: "r", SourceName: "a", Depth: 1})
	chunk := strings.Repeat("é", 1000)
	for range 20 {
		conv.Emit(wrapped("a", 1, "c", "r", []string{"c"}, event.PartDelta{Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: chunk}}))
	}
	conv.Emit(wrapped("a", 1, "c", "r", []string{"c"}, event.PartEnd{}))
	if len(last) > maxTranscript+len("…") || !strings.HasPrefix(last, "…") || !utf8.ValidString(last) {
		t.Fatalf("transcript of %d bytes, prefix %q", len(last), last[:8])
	}
}
