package acpagent

import (
	"strings"
	"testing"

	"github.com/agentpool/agentpool/model"
)

// The earlier conversation given to a new session: messages with text or
// tool calls, latest last, within the bound; older ones counted.
func TestTranscript(t *testing.T) {
	history := []model.Message{
		model.UserText("first question"),
		{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "let me look"}, {Kind: model.PartToolCall, ToolName: "Read"}}},
		{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartToolResult, Text: "file text"}}},
		{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "the answer"}}},
	}
	want := "User: first question\n\nAssistant: let me look[called Read]\n\nAssistant: the answer"
	if got := transcript(history, 1000); got != want {
		t.Errorf("whole:\n%q\nwant\n%q", got, want)
	}
	if got, want := transcript(history, 60), "[1 earlier messages left out]\n\nAssistant: let me look[called Read]\n\nAssistant: the answer"; got != want {
		t.Errorf("bounded:\n%q\nwant\n%q", got, want)
	}
	long := []model.Message{model.UserText("old"), model.UserText(strings.Repeat("é", 10))}
	if got, want := transcript(long, 7), "[1 earlier messages left out]\n\nééé"; got != want {
		t.Errorf("one long message:\n%q\nwant\n%q", got, want)
	}
	if got := transcript(nil, 10); got != "" {
		t.Errorf("none: %q", got)
	}
	if got, want := firstPrompt("Be brief.", history[:1], "next"), "Be brief.\n\nThe conversation so far:\n\nUser: first question\n\nThe new message:\n\nnext"; got != want {
		t.Errorf("first prompt:\n%q\nwant\n%q", got, want)
	}
	if got := firstPrompt("", nil, "next"); got != "next" {
		t.Errorf("first prompt alone: %q", got)
	}
}
