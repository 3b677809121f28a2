package event_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// samples holds one fully populated value of every kind.
var samples = map[event.Kind]event.Event{
	event.KindRunStarted: event.RunStarted{SessionID: "ses_1", RunID: "run_1", AgentName: "planner", ParentSessionID: "ses_0", Model: "gpt-4o-mini"},
	event.KindPartStart:  event.PartStart{Index: 1, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_1", ToolName: "task"}},
	event.KindPartDelta:  event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "Hel"}},
	event.KindPartEnd:    event.PartEnd{Index: 2},
	event.KindToolCallStart: event.ToolCallStart{ToolCallID: "cal_1", ToolName: "task", Title: "Research", ToolKind: "other",
		RawInput: json.RawMessage(`{"agent_or_team":"team"}`)},
	event.KindToolCallProgress: event.ToolCallProgress{ToolCallID: "cal_1", Status: event.StatusInProgress, Title: "Working",
		Items: []event.ProgressItem{{Type: "text", Content: "half way"}}},
	event.KindToolCallComplete: event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "task", ToolInput: json.RawMessage(`{"a":1}`),
		ToolResult: "boom", IsError: true, AgentName: "planner"},
	event.KindPlanUpdate: event.PlanUpdate{Entries: []event.PlanEntry{{Content: "research", Priority: "high", Status: "in_progress"}}},
	event.KindStreamComplete: event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done",
		Usage: event.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 2}, Cost: 0.25, Model: "test", FinishReason: "stop"}},
	event.KindRunError: event.RunError{Message: "model failed", Code: "model_error", RunID: "run_1", AgentName: "planner"},
	event.KindSpawnSessionStart: event.SpawnSessionStart{ChildSessionID: "ses_2", ParentSessionID: "ses_1", ToolCallID: "cal_1",
		SpawnMechanism: event.MechanismTask, RunMode: event.RunModeAsync, SourceName: "research", SourceType: event.SourceTeamParallel,
		Depth: 1, Description: "Research", Metadata: map[string]any{"prompt": "find", "max_depth": float64(5)}, ModelID: "test", TaskID: "tsk_1"},
	event.KindSpawnSessionEnd: event.SpawnSessionEnd{ChildSessionID: "ses_2", ParentSessionID: "ses_1", ToolCallID: "cal_1",
		SourceName: "research", SourceType: event.SourceTeamParallel, Depth: 1, StopReason: event.StopError,
		LastAssistantMessage: "partial", Error: "boom", Usage: &event.Usage{InputTokens: 3, OutputTokens: 4}, Cost: 0.5, DurationMS: 42},
	event.KindSubagent: event.Subagent{SourceName: "searcher", SourceType: event.SourceAgent, Depth: 2, ChildSessionID: "ses_3",
		ParentSessionID: "ses_2", ToolCallID: "cal_1", Path: []string{"ses_2", "ses_3"},
		Event: event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartThinking, ContentDelta: "hmm"}}},
	event.KindCustom: event.Custom{EventType: "hook_run", EventData: map[string]any{"decision": "allow"}, Source: "hooks"},
}

func TestEveryKindHasASample(t *testing.T) {
	for _, k := range event.Kinds() {
		if _, ok := samples[k]; !ok {
			t.Errorf("no sample for %s", k)
		}
	}
}

func TestGolden(t *testing.T) {
	for _, k := range event.Kinds() {
		t.Run(string(k), func(t *testing.T) {
			e := samples[k]
			got, err := event.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			path := filepath.Join("testdata", string(k)+".json")
			if *update {
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./event -update)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Fatalf("wire format drifted for %s:\n got: %s\nwant: %s", k, pretty.Bytes(), want)
			}
			// The encoding decodes back to the same value, and the golden
			// file decodes to something that encodes the same way.
			back, err := event.Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, e) {
				t.Fatalf("decode mismatch:\n got: %#v\nwant: %#v", back, e)
			}
			fromFile, err := event.Decode(want)
			if err != nil {
				t.Fatal(err)
			}
			again, err := event.Marshal(fromFile)
			if err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			_ = json.Compact(&compact, again)
			if !bytes.Equal(compact.Bytes(), got) {
				t.Fatalf("golden file re-encodes differently:\n got: %s\nwant: %s", compact.Bytes(), got)
			}
			if !strings.HasPrefix(string(got), `{"event_kind":"`+string(k)+`"`) {
				t.Fatalf("event_kind is not first: %s", got)
			}
		})
	}
}

func TestOptionalFieldsOmitted(t *testing.T) {
	cases := []event.Event{
		event.RunStarted{SessionID: "s", RunID: "r", AgentName: "a"},
		event.SpawnSessionEnd{ChildSessionID: "c", ParentSessionID: "p", SourceName: "x", SourceType: "agent", Depth: 1, StopReason: "completed"},
		event.ToolCallStart{ToolCallID: "c", ToolName: "t", Title: "t", ToolKind: "other"},
		event.SpawnSessionStart{ChildSessionID: "c", ParentSessionID: "p", SpawnMechanism: "task", RunMode: "sync", SourceName: "x", SourceType: "agent", Depth: 1},
	}
	for _, e := range cases {
		b, err := event.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("null")) {
			t.Errorf("%s carries null: %s", e.Kind(), b)
		}
		for _, f := range []string{"parent_session_id\":\"\"", "tool_call_id", "usage", "error", "last_assistant_message", "model_id", "task_id"} {
			if e.Kind() != event.KindSpawnSessionEnd && e.Kind() != event.KindSpawnSessionStart && f != "parent_session_id\":\"\"" {
				continue
			}
			if bytes.Contains(b, []byte(`"`+f)) {
				t.Errorf("%s carries empty optional %s: %s", e.Kind(), f, b)
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":        `{`,
		"no kind":         `{"index":1}`,
		"unknown kind":    `{"event_kind":"nope"}`,
		"wrong type":      `{"event_kind":"part_end","index":"x"}`,
		"subagent empty":  `{"event_kind":"subagent","source_name":"a","source_type":"agent","depth":1,"child_session_id":"c","parent_session_id":"p","path":["c"]}`,
		"nested subagent": `{"event_kind":"subagent","path":["c"],"event":{"event_kind":"subagent","path":[],"event":{"event_kind":"part_end","index":0}}}`,
		"array":           `[]`,
	} {
		if _, err := event.Decode([]byte(in)); err == nil {
			t.Errorf("%s: expected an error", name)
		}
	}
}

func TestMarshalRejectsNestedSubagent(t *testing.T) {
	inner := event.Subagent{Path: []string{"b"}, Event: event.PartEnd{}}
	if _, err := event.Marshal(event.Subagent{Path: []string{"a"}, Event: inner}); err == nil {
		t.Fatal("nested subagent encoded")
	}
	if _, err := event.Marshal(event.Subagent{Path: []string{"a"}}); err == nil {
		t.Fatal("empty subagent encoded")
	}
}

func FuzzDecode(f *testing.F) {
	for _, e := range samples {
		b, _ := event.Marshal(e)
		f.Add(b)
	}
	f.Add([]byte(`{"event_kind":"subagent","event":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := event.Decode(data)
		if err != nil {
			return
		}
		// Whatever decodes must encode, and decode again to the same kind.
		b, err := event.Marshal(e)
		if err != nil {
			t.Fatalf("decoded %s does not encode: %v", e.Kind(), err)
		}
		e2, err := event.Decode(b)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if e2.Kind() != e.Kind() {
			t.Fatalf("kind changed %s -> %s", e.Kind(), e2.Kind())
		}
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	e := samples[event.KindSubagent]
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = event.AppendJSON(buf[:0], e)
	}
}
