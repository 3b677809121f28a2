package agui

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/spawn"
)

// A subagent's activity is bounded: a message's text stops at
// maxActivityText (cut between characters), its lists at
// maxActivityEntries, and the content says it was truncated; the stream
// stays valid and its text goes out once, in appends.
func TestActivityBounded(t *testing.T) {
	m, items := fixedMapper("")
	c := func(e event.Event) event.Event { return wrap([]string{child}, "talker", e) }
	m.Map(event.RunStarted{SessionID: root, RunID: "run_a", AgentName: "lead"})
	m.Map(event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: root, SourceName: "talker", Depth: 1})
	m.Map(c(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}))
	chunk := strings.Repeat("é", 500) // 1000 bytes
	for range 70 {
		m.Map(c(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: chunk}}))
	}
	m.Map(c(event.PartEnd{Index: 0}))
	for i := range maxActivityEntries + 10 {
		id := fmt.Sprintf("call_%d", i)
		m.Map(c(event.ToolCallStart{ToolCallID: id, ToolName: "Read", RawInput: []byte(`{"file_path":"a"}`)}))
		m.Map(c(event.ToolCallComplete{ToolCallID: id, ToolName: "Read", ToolResult: "ok"}))
	}
	m.Map(event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: root, SourceName: "talker", Depth: 1, StopReason: event.StopCompleted})
	m.Finish(pool.RunResult{SessionID: root, Result: spawn.Result{Output: "done", StopReason: event.StopCompleted}})

	body := encodeItems(*items)
	evs := parseSSE(t, body)
	verifyStream(t, evs, root)
	a := activities(t, evs)[child]
	text := activityText(t, evs)[child]
	if len(text) > maxActivityText || len(text) < maxActivityText-4 || !utf8.ValidString(text) {
		t.Errorf("text of %d bytes (valid %v), want at most %d", len(text), utf8.ValidString(text), maxActivityText)
	}
	if n := len(a["toolCalls"].([]any)); n != maxActivityEntries {
		t.Errorf("%d tool calls kept, want %d", n, maxActivityEntries)
	}
	if a["truncated"] != true || a["status"] != "completed" {
		t.Errorf("truncated %v, status %v", a["truncated"], a["status"])
	}
	// The text went out as appends of its deltas: its ops carry its
	// bytes once, not its square.
	sent := 0
	for _, e := range evs {
		if e["type"] != wire.TypeActivityDelta {
			continue
		}
		for _, o := range e["patch"].([]any) {
			op := o.(map[string]any)
			if op["path"] == "/messages/0/content/-" {
				sent += len(op["value"].(string))
			} else if strings.HasPrefix(op["path"].(string), "/messages/0/content") {
				t.Errorf("a text op that is no append: %v", op)
			}
		}
	}
	if sent != len(text) {
		t.Errorf("%d bytes of text appends for %d bytes of text", sent, len(text))
	}
}
