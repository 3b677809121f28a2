package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
)

// The updates of one read call as opencode 1.18.33 sends them (seen on
// the wire): announced pending with no input and no file, then running
// with its input and file, then completed with its display title but
// neither. The call's end keeps the input and the file, and its last
// title comes before it as progress (tool_call_complete has no title).
func TestTurnKeepsWhatAnAgentNamedBeforeTheEnd(t *testing.T) {
	var evs []event.Event
	tr := newTurn(context.Background(), &Node{cfg: Config{Name: "opencode"}}, &spawn.Invocation{Sink: event.SinkFunc(func(e event.Event) { evs = append(evs, e) })})
	running, completed := acp.ToolCallStatusInProgress, acp.ToolCallStatusCompleted
	title, kind := "read", acp.ToolKindRead
	shown := "project/notes.md"
	tr.update(acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "call_1", Title: "read", Kind: acp.ToolKindRead,
		Status: acp.ToolCallStatusPending, Locations: []acp.ToolCallLocation{}, RawInput: map[string]any{}}})
	tr.update(acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "call_1", Status: &running, Kind: &kind, Title: &title,
		Locations: []acp.ToolCallLocation{{Path: "notes.md"}}, RawInput: map[string]any{"filePath": "notes.md"}}})
	tr.update(acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "call_1", Status: &completed, Title: &shown,
		Content: []acp.ToolCallContent{acp.ToolContent(acp.TextBlock("Greet the team."))}, RawOutput: map[string]any{"output": "<path>…</path>"}}})
	tr.finish("the prompt was answered")
	var got []string
	for _, e := range evs {
		switch v := e.(type) {
		case event.ToolCallStart:
			got = append(got, fmt.Sprintf("start %s %q %s", v.ToolName, v.Title, v.RawInput))
		case event.ToolCallProgress:
			got = append(got, fmt.Sprintf("progress %s %q", v.Status, v.Title))
		case event.ToolCallComplete:
			b, _ := json.Marshal(v.Locations)
			got = append(got, fmt.Sprintf("complete %s %s %s %q", v.ToolName, v.ToolInput, b, v.ToolResult))
		}
	}
	want := []string{
		`start read "read" {}`,
		`progress in_progress "read"`,
		`progress in_progress "project/notes.md"`,
		`complete read {"filePath":"notes.md"} [{"path":"notes.md"}] "Greet the team."`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestFinishReason(t *testing.T) {
	for r, want := range map[acp.StopReason]string{
		acp.StopReasonEndTurn: "stop", acp.StopReasonMaxTokens: "length", acp.StopReasonRefusal: "refusal",
	} {
		if got := finishReason(r); got != want {
			t.Errorf("finishReason(%s) = %q, want %q", r, got, want)
		}
	}
}
