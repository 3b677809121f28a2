package session_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

func call(id string) model.Part {
	return model.Part{Kind: model.PartToolCall, ToolCallID: id, ToolName: "task", Args: json.RawMessage(`{}`)}
}

func result(id string) model.Part {
	return model.Part{Kind: model.PartToolResult, ToolCallID: id, ToolName: "task", Text: "done"}
}

func kinds(t *testing.T, st session.Store, id string) string {
	t.Helper()
	recs, err := st.Events(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Event.Kind()))
	}
	return strings.Join(out, " ")
}

// A root killed while two children ran, one of which had already ended
// (only its spawn_session_end was lost) and one still streaming with a
// grandchild: everything is closed from the bottom up, the ended child
// keeps its own stop reason, and closing again adds nothing.
func TestCloseInterrupted(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	mk := func(id, parent string, depth int, status session.Status, stop event.StopReason) {
		t.Helper()
		err := st.CreateSession(ctx, session.Session{ID: id, ParentID: parent, Depth: depth, AgentName: "agent-" + id, SourceType: event.SourceAgent,
			Status: status, StopReason: stop, CreatedAt: now, TotalUsage: event.Usage{InputTokens: 3}})
		if err != nil {
			t.Fatal(err)
		}
	}
	start := func(parent, child, callID string, depth int) event.SpawnSessionStart {
		return event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: parent, ToolCallID: callID, SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: "agent-" + child, SourceType: event.SourceAgent, Depth: depth}
	}
	app := func(id string, evs ...event.Event) {
		t.Helper()
		if err := st.AppendEvents(ctx, id, evs...); err != nil {
			t.Fatal(err)
		}
	}
	mk("root", "", 0, session.StatusRunning, "")
	mk("done", "root", 1, session.StatusCompleted, event.StopCompleted)
	mk("busy", "root", 1, session.StatusRunning, "")
	mk("deep", "busy", 2, session.StatusRunning, "")
	app("root", event.RunStarted{SessionID: "root", RunID: "r1"},
		event.ToolCallStart{ToolCallID: "c1", ToolName: "task"}, event.ToolCallStart{ToolCallID: "c2", ToolName: "task"},
		start("root", "done", "c1", 1), start("root", "busy", "c2", 1))
	app("done", event.RunStarted{SessionID: "done", RunID: "r2"}, event.StreamComplete{})
	app("busy", event.RunStarted{SessionID: "busy", RunID: "r3"}, start("busy", "deep", "c3", 2))
	app("deep", event.RunStarted{SessionID: "deep", RunID: "r4"})
	if err := st.AppendMessages(ctx, "root",
		session.Message{ID: "m1", Message: model.UserText("go")},
		session.Message{ID: "m2", Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{call("c1"), call("c2")}}},
	); err != nil {
		t.Fatal(err)
	}

	for range 2 { // the second time changes nothing
		if err := session.CloseInterrupted(ctx, st, "root"); err != nil {
			t.Fatal(err)
		}
		if got, want := kinds(t, st, "root"), "run_started tool_call_start tool_call_start spawn_session_start spawn_session_start spawn_session_end spawn_session_end tool_call_complete tool_call_complete run_error"; got != want {
			t.Fatalf("root log:\n got %s\nwant %s", got, want)
		}
		if got, want := kinds(t, st, "busy"), "run_started spawn_session_start spawn_session_end run_error"; got != want {
			t.Fatalf("busy log:\n got %s\nwant %s", got, want)
		}
		if got, want := kinds(t, st, "deep"), "run_started run_error"; got != want {
			t.Fatalf("deep log:\n got %s\nwant %s", got, want)
		}
		if got, want := kinds(t, st, "done"), "run_started stream_complete"; got != want {
			t.Fatalf("an ended child's log changed: %s", got)
		}
		msgs, _ := st.Messages(ctx, "root")
		if len(msgs) != 3 || msgs[2].Role != model.RoleTool || len(msgs[2].Parts) != 2 || !msgs[2].Parts[1].IsError ||
			!strings.HasPrefix(msgs[2].Parts[1].Text, "interrupted") {
			t.Fatalf("conversation: %+v", msgs)
		}
	}
	recs, _ := st.Events(ctx, "root", 0)
	ends := map[string]event.SpawnSessionEnd{}
	for _, r := range recs {
		if e, ok := r.Event.(event.SpawnSessionEnd); ok {
			ends[e.ChildSessionID] = e
		}
	}
	if e := ends["done"]; e.StopReason != event.StopCompleted || e.Usage == nil || e.Usage.InputTokens != 3 || e.ToolCallID != "c1" {
		t.Errorf("end of the child that had ended: %+v", e)
	}
	if e := ends["busy"]; e.StopReason != event.StopInterrupted || e.Error == "" || e.Depth != 1 || e.ToolCallID != "c2" {
		t.Errorf("end of the interrupted child: %+v", e)
	}
	for id, want := range map[string]session.Status{"root": session.StatusInterrupted, "busy": session.StatusInterrupted, "deep": session.StatusInterrupted, "done": session.StatusCompleted} {
		if s, _ := st.GetSession(ctx, id); s.Status != want {
			t.Errorf("%s: %s, want %s", id, s.Status, want)
		}
	}
}

// History gives every tool call a result right after its message, even in
// the middle of a conversation (one an older version resumed without
// closing it); complete conversations are unchanged.
func TestHistory(t *testing.T) {
	msg := func(role model.Role, parts ...model.Part) session.Message {
		return session.Message{Message: model.Message{Role: role, Parts: parts}}
	}
	text := model.Part{Kind: model.PartText, Text: "hi"}
	complete := []session.Message{msg(model.RoleUser, text), msg(model.RoleAssistant, call("a")), msg(model.RoleTool, result("a")), msg(model.RoleAssistant, text)}
	if got := session.History(complete); len(got) != 4 {
		t.Fatalf("a complete conversation changed: %+v", got)
	}
	broken := []session.Message{
		msg(model.RoleUser, text),
		msg(model.RoleAssistant, call("a"), call("b")),
		msg(model.RoleTool, result("a")),
		msg(model.RoleUser, text),
		msg(model.RoleAssistant, call("c")),
	}
	got := session.History(broken)
	var roles []string
	for _, m := range got {
		roles = append(roles, string(m.Role))
	}
	if want := "user assistant tool tool user assistant tool"; strings.Join(roles, " ") != want {
		t.Fatalf("roles %v, want %s", roles, want)
	}
	if p := got[3].Parts; len(p) != 1 || p[0].ToolCallID != "b" || !p[0].IsError || p[0].Text != session.InterruptedResult {
		t.Errorf("result for b: %+v", p)
	}
	if p := got[6].Parts; len(p) != 1 || p[0].ToolCallID != "c" || !p[0].IsError {
		t.Errorf("result for c: %+v", p)
	}
	if len(broken[2].Parts) != 1 {
		t.Error("History changed its input")
	}
}
