package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	root  = "ses_root"
	child = "ses_child"
	grand = "ses_grand"
)

// fixedMapper maps with a fixed clock and counting ids, collecting items.
func fixedMapper(state string) (*mapper, *[]item) {
	var items []item
	n := 0
	cfg := mapperConfig{
		ThreadID: "thread-1", RunID: "run-1", ParentRunID: "run-0", RootSession: root,
		Now:   func() int64 { return 1700000000000 },
		NewID: func(prefix string) string { n++; return fmt.Sprintf("%s_%03d", prefix, n) },
	}
	if state != "" {
		cfg.State = json.RawMessage(state)
	}
	return newMapper(cfg, func(it item) { items = append(items, it) }), &items
}

func wrap(path []string, name string, e event.Event) event.Event {
	c := path[len(path)-1]
	parent := root
	if len(path) > 1 {
		parent = path[len(path)-2]
	}
	return event.Subagent{SourceName: name, SourceType: event.SourceAgent, Depth: len(path), ChildSessionID: c,
		ParentSessionID: parent, Path: path, Event: e}
}

// nestedStream is a root run with reasoning, text, a tool call that spawns
// a child, a grandchild that fails, progress, a plan, a custom event and a
// second turn.
func nestedStream() []event.Event {
	c := func(e event.Event) event.Event { return wrap([]string{child}, "researcher", e) }
	g := func(e event.Event) event.Event { return wrap([]string{child, grand}, "checker", e) }
	return []event.Event{
		event.RunStarted{SessionID: root, RunID: "run_a", AgentName: "planner"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartThinking}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartThinking, ContentDelta: "Delegate "}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartThinking, ContentDelta: "the research."}},
		event.PartEnd{Index: 0},
		event.PartStart{Index: 1, Part: event.Part{PartKind: event.PartText}},
		event.PartDelta{Index: 1, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "Asking a \"researcher\"\n"}},
		event.PartEnd{Index: 1},
		event.PartStart{Index: 2, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_1", ToolName: "task"}},
		event.PartDelta{Index: 2, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: `{"agent_or_team":`, ToolCallID: "cal_1"}},
		event.PartDelta{Index: 2, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: `"researcher"}`, ToolCallID: "cal_1"}},
		event.PartEnd{Index: 2},
		event.ToolCallStart{ToolCallID: "cal_1", ToolName: "task", Title: "task", ToolKind: "other", RawInput: json.RawMessage(`{}`)},
		event.ToolCallProgress{ToolCallID: "cal_1", Status: event.StatusInProgress},
		event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: root, ToolCallID: "cal_1", SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: "researcher", SourceType: event.SourceAgent, Depth: 1, Description: "Research"},
		c(event.RunStarted{SessionID: child, RunID: "run_b", AgentName: "researcher", ParentSessionID: root}),
		c(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText, Content: "Found "}}),
		c(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "it."}}),
		c(event.PartEnd{Index: 0}),
		g(event.SpawnSessionStart{ChildSessionID: grand, ParentSessionID: child, SpawnMechanism: event.MechanismWorker,
			RunMode: event.RunModeSync, SourceName: "checker", SourceType: event.SourceAgent, Depth: 2}),
		g(event.RunStarted{SessionID: grand, RunID: "run_c", AgentName: "checker", ParentSessionID: child}),
		g(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}),
		g(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "Check"}}),
		g(event.RunError{Message: "model checker: overloaded", Code: "model_error"}),
		c(event.SpawnSessionEnd{ChildSessionID: grand, ParentSessionID: child, SourceName: "checker", Depth: 2,
			StopReason: event.StopError, Error: "model checker: overloaded"}),
		c(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Found it.", FinishReason: "stop"}}),
		event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: root, ToolCallID: "cal_1", SourceName: "researcher",
			Depth: 1, StopReason: event.StopCompleted, LastAssistantMessage: "Found it."},
		event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "task", ToolInput: json.RawMessage(`{}`), ToolResult: `{"output":"Found it."}`, AgentName: "planner"},
		event.PlanUpdate{Entries: []event.PlanEntry{{Content: "answer", Priority: "high", Status: "completed"}}},
		event.Custom{EventType: "hook_run", EventData: map[string]any{"hook": "post_tool"}},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "Done: found it."}},
		event.PartEnd{Index: 0},
		event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Done: found it.", FinishReason: "stop"}},
	}
}

func encodeItems(items []item) []byte {
	var buf []byte
	for _, it := range items {
		buf = it.appendSSE(buf)
	}
	return buf
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s\n(go test -update rewrites it)", path, i+1, g, w)
			}
		}
	}
}

func TestGoldenSSE(t *testing.T) {
	m, items := fixedMapper(`{
		"counter": 1,
		"tags": ["a", null]
	}`)
	for _, e := range nestedStream() {
		m.Map(e)
	}
	m.Finish(pool.RunResult{SessionID: root, Result: spawn.Result{Output: "Done: found it.", StopReason: event.StopCompleted}})
	got := encodeItems(*items)
	golden(t, "nested.sse", got)
	verifyStream(t, parseSSE(t, got), root)
}

// An external ACP agent as a child streams no model parts: its tool calls
// arrive as tool_call_start alone, with the input it had when it announced
// them (opencode's: none yet). Each is announced (START, ARGS when there
// is input, END) before its progress and result, once, in the child's
// step; a call announced by its part is not announced again.
func TestGoldenExternalAgentToolCalls(t *testing.T) {
	m, items := fixedMapper("")
	c := func(e event.Event) event.Event { return wrap([]string{child}, "opencode", e) }
	for _, e := range []event.Event{
		event.RunStarted{SessionID: root, RunID: "run_a", AgentName: "pair"},
		event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: root, SourceName: "opencode", Description: "pair member opencode", Depth: 1},
		c(event.RunStarted{SessionID: child, RunID: "run_b", AgentName: "opencode"}),
		c(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartThinking}}),
		c(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartThinking, ContentDelta: "Read the notes."}}),
		c(event.PartEnd{Index: 0}),
		c(event.ToolCallStart{ToolCallID: "call_read", ToolName: "read", Title: "read", ToolKind: "read", RawInput: json.RawMessage(`{}`)}),
		c(event.ToolCallProgress{ToolCallID: "call_read", Status: event.StatusInProgress, Title: "read"}),
		c(event.ToolCallComplete{ToolCallID: "call_read", ToolName: "read", ToolInput: json.RawMessage(`{"filePath":"notes.md"}`),
			ToolResult: "Greet the team.", AgentName: "opencode", Locations: []event.Location{{Path: "notes.md"}}}),
		c(event.ToolCallStart{ToolCallID: "call_ls", ToolName: "search", Title: "list", ToolKind: "search", RawInput: json.RawMessage(`{"path":"."}`)}),
		c(event.ToolCallStart{ToolCallID: "call_ls", ToolName: "search", Title: "list", ToolKind: "search", RawInput: json.RawMessage(`{"path":"."}`)}),
		c(event.ToolCallComplete{ToolCallID: "call_ls", ToolName: "search", ToolInput: json.RawMessage(`{"path":"."}`), ToolResult: "notes.md", AgentName: "opencode"}),
		c(event.PartStart{Index: 1, Part: event.Part{PartKind: event.PartText}}),
		c(event.PartDelta{Index: 1, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "Hello, team."}}),
		c(event.PartEnd{Index: 1}),
		c(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Hello, team.", FinishReason: "stop"}}),
		event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: root, SourceName: "opencode", Depth: 1, StopReason: event.StopCompleted,
			LastAssistantMessage: "Hello, team."},
	} {
		m.Map(e)
	}
	m.Finish(pool.RunResult{SessionID: root, Result: spawn.Result{Output: "[opencode]\nHello, team.", StopReason: event.StopCompleted}})
	got := encodeItems(*items)
	golden(t, "external_agent.sse", got)
	evs := parseSSE(t, got)
	verifyStream(t, evs, root)
	for _, e := range evs {
		if _, ok := e["toolCallId"]; ok {
			t.Errorf("%v: the child's tool call as a message of the run", e["type"])
		}
	}
	// In the child's activity, once each, with its input (named late for
	// call_read: in the result's metadata) and result.
	var seq []string
	for _, c := range activities(t, evs)[child]["toolCalls"].([]any) {
		c := c.(map[string]any)
		seq = append(seq, fmt.Sprint(c["id"], " ", c["name"], " ", pieces(t, c["args"]), " ", c["status"], " ", c["result"]))
	}
	want := []string{"call_read read  completed Greet the team.", `call_ls search {"path":"."} completed notes.md`}
	if strings.Join(seq, "|") != strings.Join(want, "|") {
		t.Errorf("the child's tool calls:\n got %q\nwant %q", seq, want)
	}
}

func TestGoldenRunError(t *testing.T) {
	m, items := fixedMapper("")
	c := func(e event.Event) event.Event { return wrap([]string{child}, "researcher", e) }
	for _, e := range []event.Event{
		event.RunStarted{SessionID: root, RunID: "run_a", AgentName: "planner"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_1", ToolName: "task"}},
		event.PartEnd{Index: 0},
		event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: root, ToolCallID: "cal_1", SourceName: "researcher", Depth: 1,
			RunMode: event.RunModeAsync},
		c(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartThinking}}),
		c(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartThinking, ContentDelta: "Hmm"}}),
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "Partial"}},
		event.RunError{Message: "model planner: boom", Code: "model_error"},
	} {
		m.Map(e)
	}
	// The child never reported its end: Finish closes it as well.
	m.Finish(pool.RunResult{SessionID: root, Result: spawn.Result{StopReason: event.StopError, Err: errors.New("model planner: boom")}})
	got := encodeItems(*items)
	golden(t, "run_error.sse", got)
	evs := parseSSE(t, got)
	verifyStream(t, evs, root)
	last := evs[len(evs)-1]
	if last["type"] != wire.TypeRunError || last["message"] != "model planner: boom" || last["code"] != "model_error" {
		t.Fatalf("last event = %v, want RUN_ERROR model_error", last)
	}
}

func TestFinishOutcomes(t *testing.T) {
	for _, tc := range []struct {
		stop event.StopReason
		want string
	}{
		{event.StopCompleted, wire.TypeRunFinished},
		{event.StopMaxTokens, wire.TypeRunFinished},
		{event.StopAborted, wire.TypeRunFinished},
		{event.StopError, wire.TypeRunError},
	} {
		m, items := fixedMapper("")
		m.Finish(pool.RunResult{Result: spawn.Result{StopReason: tc.stop}})
		evs := *items
		if len(evs) != 2 || evs[0].ev.Type != wire.TypeRunStarted {
			t.Errorf("%s: a run without events or state is RUN_STARTED and its end, got %d events", tc.stop, len(evs))
		}
		last := evs[len(evs)-1].ev
		if last.Type != tc.want {
			t.Errorf("%s: last = %s, want %s", tc.stop, last.Type, tc.want)
		}
		if tc.stop == event.StopAborted && last.Outcome != "cancelled" {
			t.Errorf("aborted run: outcome %q, want cancelled", last.Outcome)
		}
		// Nothing after the end.
		m.Map(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}})
		m.Finish(pool.RunResult{Result: spawn.Result{StopReason: tc.stop}})
		if len(*items) != len(evs) {
			t.Errorf("%s: events after the end", tc.stop)
		}
	}
}

func TestFallbackSubagentWithoutStart(t *testing.T) {
	m, items := fixedMapper("")
	m.Map(event.RunStarted{SessionID: root})
	m.Map(wrap([]string{child}, "stray", event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}))
	m.Map(wrap([]string{child}, "stray", event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "x"}}))
	// A delta without its part_start opens the part.
	m.Map(event.PartDelta{Index: 3, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: "{}", ToolCallID: "cal_9"}})
	m.Finish(pool.RunResult{Result: spawn.Result{StopReason: event.StopCompleted}})
	evs := parseSSE(t, encodeItems(*items))
	verifyStream(t, evs, root)
	var sawStart, sawErr bool
	for _, e := range evs {
		switch e["type"] {
		case wire.TypeSubagentStarted:
			sawStart = e["name"] == "stray" && e["subagentRunId"] == child
		case wire.TypeSubagentError:
			sawErr = e["subagentRunId"] == child
		}
	}
	if !sawStart || !sawErr {
		t.Fatalf("stray child: started %v, closed with an error %v", sawStart, sawErr)
	}
}

func TestEncodingRequiredAndOptional(t *testing.T) {
	for _, tc := range []struct {
		ev   wire.Event
		want string
	}{
		{wire.Event{Type: wire.TypeToolCallResult, MessageID: "m", ToolCallID: "c"}, `{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":""}`},
		{wire.Event{Type: wire.TypeStateSnapshot, SubagentRunID: "s"}, `{"type":"STATE_SNAPSHOT","subagentRunId":"s","snapshot":{}}`},
		{wire.Event{Type: wire.TypeStateDelta}, `{"type":"STATE_DELTA","delta":[]}`},
		{wire.Event{Type: wire.TypeStateDelta, Patch: json.RawMessage(`{"op":"x"}`)}, `{"type":"STATE_DELTA","delta":[]}`},
		{wire.Event{Type: wire.TypeStateDelta, Patch: json.RawMessage("[\n {\"op\": \"remove\", \"path\": \"/todos/1\"}\n]")}, `{"type":"STATE_DELTA","delta":[{"op":"remove","path":"/todos/1"}]}`},
		{wire.Event{Type: wire.TypeToolCallResult, MessageID: "m", ToolCallID: "c", Content: "ok", Role: "tool", Metadata: json.RawMessage(`{"agentpool":{"is_error":true}}`)},
			`{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"ok","role":"tool","metadata":{"agentpool":{"is_error":true}}}`},
		{wire.Event{Type: wire.TypeCustom, Name: "n", Value: json.RawMessage("null")}, `{"type":"CUSTOM","name":"n","value":{}}`},
		{wire.Event{Type: wire.TypeRunError, SubagentRunID: "s", Message: "m"}, `{"type":"RUN_ERROR","message":"m"}`},
		{wire.Event{Type: wire.TypeRunFinished, ThreadID: "t", RunID: "r", Outcome: "cancelled"}, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`},
		{wire.Event{Type: wire.TypeTextMessageContent, MessageID: "m", Delta: "a\u2028b\n</script>", Timestamp: 5}, `{"type":"TEXT_MESSAGE_CONTENT","timestamp":5,"messageId":"m","delta":"a\u2028b\n\u003c/script\u003e"}`},
		{wire.Event{Type: wire.TypeSubagentFinished, SubagentRunID: "s"}, `{"type":"SUBAGENT_FINISHED","subagentRunId":"s"}`},
	} {
		got := string(tc.ev.AppendJSON(nil))
		if got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("invalid JSON: %s", got)
		}
	}
}
