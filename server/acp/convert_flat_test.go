package acp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// checkFlat checks the updates a client without the spawn tool calls gets
// (viewFlat): everything on the root session, no subagent_update, each
// tool call announced once, updated only while open and closed exactly
// once, and each child session shown by one tool call only. It returns
// the statuses each tool call went through and its last content's text,
// by tool call id.
func checkFlat(t *testing.T, root string, notes []note) (statuses map[string][]string, content map[string]string) {
	t.Helper()
	statuses, content = map[string][]string{}, map[string]string{}
	closed := map[string]bool{}
	shownBy := map[string]string{} // child session -> the tool call that shows it
	for i, n := range notes {
		u := n.Update
		if n.SessionID != root {
			t.Errorf("update %d (%s) on session %s, want the root", i, u.SessionUpdate, n.SessionID)
		}
		if u.SessionUpdate == updateSubagent {
			t.Errorf("update %d: subagent_update for a client without subagents", i)
		}
		if u.Kind != "" && !toolKinds[u.Kind] {
			t.Errorf("update %d: invalid tool kind %q", i, u.Kind)
		}
		if u.Status != "" && toolStatus(u.Status) == "" {
			t.Errorf("update %d: invalid status %q", i, u.Status)
		}
		switch u.SessionUpdate {
		case updateToolCall:
			if _, dup := statuses[u.ToolCallID]; dup {
				t.Errorf("update %d: second tool_call %s", i, u.ToolCallID)
			}
			statuses[u.ToolCallID] = []string{u.Status}
		case updateToolCallUpdate:
			if _, ok := statuses[u.ToolCallID]; !ok {
				t.Errorf("update %d: tool_call_update of unknown tool call %s", i, u.ToolCallID)
			}
			if closed[u.ToolCallID] {
				t.Errorf("update %d: update of tool call %s after it closed", i, u.ToolCallID)
			}
			if u.Status != "" {
				statuses[u.ToolCallID] = append(statuses[u.ToolCallID], u.Status)
				closed[u.ToolCallID] = u.Status == statusCompleted || u.Status == statusFailed
			}
		default:
			continue
		}
		if meta, _ := u.Meta["agentpool"].(map[string]any); meta != nil {
			if child, _ := meta["child_session_id"].(string); child != "" {
				if by, ok := shownBy[child]; ok && by != u.ToolCallID {
					t.Errorf("update %d: child %s shown by %s and %s", i, child, by, u.ToolCallID)
				}
				shownBy[child] = u.ToolCallID
			}
		}
		if len(u.Content) > 0 {
			var blocks []toolCallContent
			_ = json.Unmarshal(u.Content, &blocks)
			var texts []string
			for _, b := range blocks {
				texts = append(texts, b.Content.Text)
			}
			content[u.ToolCallID] = strings.Join(texts, "\n---\n")
		}
	}
	for id := range statuses {
		if !closed[id] {
			t.Errorf("tool call %s never closed: %v", id, statuses[id])
		}
	}
	return statuses, content
}

// TestConvertFlatOneToolCallPerDelegation: for a client without the spawn
// tool calls, the golden stream's delegations are their tool calls, with
// the child's text, its tool calls and its grandchild nested inside, and
// only the child no tool call started gets a spawn tool call.
func TestConvertFlatOneToolCallPerDelegation(t *testing.T) {
	statuses, content := checkFlat(t, goldenRoot, toNotes(convertGolden(t, viewFlat)))
	var ids []string
	for id := range statuses {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if want := []string{"cal_1", "cal_4", "cal_5", "spawn:ses_c3"}; !slices.Equal(ids, want) {
		t.Fatalf("tool calls %v, want %v", ids, want)
	}
	for id, want := range map[string][]string{
		"cal_1":        {statusInProgress, statusInProgress, statusCompleted},
		"cal_4":        {statusInProgress, statusInProgress, statusFailed}, // its child failed in the background
		"cal_5":        {statusInProgress, statusFailed},
		"spawn:ses_c3": {statusInProgress, statusFailed},
	} {
		if !slices.Equal(statuses[id], want) {
			t.Errorf("%s went %v, want %v", id, statuses[id], want)
		}
	}
	for _, want := range []string{"→ Ask checker", "→ spawned checker", "  Confirmed.", "✓ checker", "→ Read notes.md", "✗ read_file: no such file", "Found facts."} {
		if !strings.Contains(content["cal_1"], want) {
			t.Errorf("cal_1's last content lacks %q:\n%s", want, content["cal_1"])
		}
	}
	if !strings.HasSuffix(content["cal_1"], "\n---\nFound facts.") {
		t.Errorf("cal_1 does not end with the child's answer:\n%s", content["cal_1"])
	}
	if !strings.Contains(content["cal_4"], "Failed: model test: upstream failed") {
		t.Errorf("cal_4's last content: %q", content["cal_4"])
	}
}
