package replay

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
)

// runEvents are the events of a root that starts an async task and asks
// for its status, with the ids of one run (session, child, task).
func runEvents(root, child, task string) []event.Event {
	start := `{"agent_or_team":"helper","async_mode":true,"prompt":"Go."}`
	status := `{"task_id":"` + task + `"}`
	return []event.Event{
		event.RunStarted{SessionID: root, RunID: "run_1", AgentName: "lead"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "c1", ToolName: "task"}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: start, ToolCallID: "c1"}},
		event.PartEnd{Index: 0},
		event.ToolCallStart{ToolCallID: "c1", ToolName: "task", RawInput: json.RawMessage(start)},
		event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: root, ToolCallID: "c1", SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeAsync, SourceName: "helper", SourceType: event.SourceAgent, Depth: 1, TaskID: task},
		event.ToolCallComplete{ToolCallID: "c1", ToolName: "task", ToolResult: `{"session_id":"` + child + `","task_id":"` + task + `"}`},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "c2", ToolName: "task_status"}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: status, ToolCallID: "c2"}},
		event.PartEnd{Index: 0},
		event.ToolCallStart{ToolCallID: "c2", ToolName: "task_status", RawInput: json.RawMessage(status)},
		event.ToolCallComplete{ToolCallID: "c2", ToolName: "task_status", ToolResult: `{"status":"completed","task_id":"` + task + `"}`},
		event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: root, ToolCallID: "c1", SourceName: "helper", StopReason: event.StopCompleted},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "Done."}},
		event.PartEnd{Index: 0},
		event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Done.", FinishReason: model.FinishStop}},
	}
}

// A recorded answer that names a recorded task reaches the replay's tool
// with the replay's task id, and results that name the replay's child and
// task compare equal to the recorded ones.
func TestReplayTranslatesIDs(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	call := func(id, name, args string) model.Message {
		return model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartToolCall, ToolCallID: id, ToolName: name, Args: json.RawMessage(args)}}}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.CreateSession(ctx, session.Session{ID: "ses_R", AgentName: "lead"}))
	must(st.CreateSession(ctx, session.Session{ID: "ses_RC", ParentID: "ses_R", Depth: 1, AgentName: "helper"}))
	must(st.AppendEvents(ctx, "ses_R", runEvents("ses_R", "ses_RC", "task_REC")...))
	must(st.AppendMessages(ctx, "ses_R",
		session.Message{ID: "m1", Message: model.UserText("Start it.")},
		session.Message{ID: "m2", Message: call("c1", "task", `{"agent_or_team":"helper","async_mode":true,"prompt":"Go."}`)},
		session.Message{ID: "m3", Message: call("c2", "task_status", `{"task_id":"task_REC"}`)},
		session.Message{ID: "m4", Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "Done."}}}}))
	must(st.AppendEvents(ctx, "ses_RC",
		event.RunStarted{SessionID: "ses_RC", RunID: "run_2", AgentName: "helper", ParentSessionID: "ses_R"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "Gone."}},
		event.PartEnd{Index: 0},
		event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Gone.", FinishReason: model.FinishStop}}))
	must(st.AppendMessages(ctx, "ses_RC",
		session.Message{ID: "m5", Message: model.UserText("Go.")},
		session.Message{ID: "m6", Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "Gone."}}}}))

	rec, err := Load(ctx, st, "ses_R", nil)
	must(err)
	if rec.Prompts[0] != "Start it." || rec.Calls() != 4 || len(rec.Tapes["ses_R"].Responses[0].Chunks) != 2 {
		t.Fatalf("recording: %q, %d calls, %+v", rec.Prompts, rec.Calls(), rec.Tapes["ses_R"].Responses[0])
	}
	p := NewPlayer(rec)
	m := p.Model(config.ModelSpec{Type: config.ModelScripted})
	root := spawn.WithInvocation(ctx, &spawn.Invocation{Session: session.Session{ID: "ses_N", AgentName: "lead"}})
	kid := spawn.WithInvocation(ctx, &spawn.Invocation{Session: session.Session{ID: "ses_NC", ParentID: "ses_N", AgentName: "helper"}})
	answer := func(ctx context.Context) string {
		var b strings.Builder
		for c, err := range m.Stream(ctx, &model.Request{}) {
			must(err)
			b.WriteString(c.Text + c.ArgsDelta)
		}
		return b.String()
	}
	live := runEvents("ses_N", "ses_NC", "task_NEW")
	if got := answer(root); got != `{"agent_or_team":"helper","async_mode":true,"prompt":"Go."}` {
		t.Fatalf("first answer %q", got)
	}
	for _, e := range live[:7] { // to the task's result
		p.Emit(e)
	}
	if got := answer(kid); got != "Gone." {
		t.Errorf("the child's answer %q", got)
	}
	for _, e := range []event.Event{
		event.RunStarted{SessionID: "ses_NC", RunID: "run_9", AgentName: "helper", ParentSessionID: "ses_N"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		event.StreamComplete{Message: event.Message{Role: "assistant", Content: "Gone.", FinishReason: model.FinishStop}},
	} {
		p.Emit(event.Subagent{ChildSessionID: "ses_NC", ParentSessionID: "ses_N", Path: []string{"ses_NC"}, Event: e})
	}
	if got := answer(root); got != `{"task_id":"task_NEW"}` {
		t.Errorf("the task_status call names %q, want the replay's task", got)
	}
	for _, e := range live[7:] {
		p.Emit(e)
	}
	if got := answer(root); got != "Done." {
		t.Errorf("last answer %q", got)
	}
	res := p.Result()
	if len(res.Divergences) != 0 || res.Replayed != 2 || res.Answered != 4 {
		t.Errorf("result %+v", res)
	}
	// One call more than recorded: no answer, a divergence.
	for _, err := range m.Stream(root, &model.Request{}) {
		if err == nil || !strings.Contains(err.Error(), "recorded 3 model calls; call 4 has no recorded answer") {
			t.Errorf("a fourth call: %v", err)
		}
	}
	if res := p.Result(); len(res.Divergences) != 1 || res.Divergences[0].Kind != "model_call" || res.Divergences[0].Turn != 4 {
		t.Errorf("after a call too many: %+v", res.Divergences)
	}
}
