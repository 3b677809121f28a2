package sessiontree_test

import (
	"context"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/sessiontree"
)

// A message delivered to a running child (the session_message custom
// event) is a user message between its two model responses; the child
// continued after its end (a start marked resumed) runs again in the
// same projected session, its new prompt a user message, linked from
// the parent's new tool call.
func TestChildMessageAndResume(t *testing.T) {
	_, p, rec, _ := newHand(t)
	ctx := context.Background()
	w := func(e event.Event) event.Subagent { return wrap([]string{"ses_c"}, "ses_root", 1, e) }
	p.Apply(ctx, "ses_root", event.RunStarted{SessionID: "ses_root", RunID: "run_1", AgentName: "root"})
	p.Apply(ctx, "ses_root", event.ToolCallStart{ToolCallID: "cal_1", ToolName: "task", Title: "task", RawInput: []byte(`{}`)})
	p.Apply(ctx, "ses_root", start("ses_c", "ses_root", "cal_1", 1))
	p.Apply(ctx, "ses_root", w(event.RunStarted{SessionID: "ses_c", RunID: "run_2", AgentName: "worker"}))
	p.Apply(ctx, "ses_root", w(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText, Content: "first"}}))
	p.Apply(ctx, "ses_root", w(event.PartEnd{Index: 0}))
	p.Apply(ctx, "ses_root", w(event.Custom{EventType: "session_message", Source: "spawn", EventData: map[string]any{"from": "user", "by": "web", "text": "also this"}}))
	p.Apply(ctx, "ses_root", w(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText, Content: "second"}}))
	p.Apply(ctx, "ses_root", w(event.PartEnd{Index: 0}))
	p.Apply(ctx, "ses_root", event.SpawnSessionEnd{ChildSessionID: "ses_c", ParentSessionID: "ses_root", ToolCallID: "cal_1", StopReason: event.StopCompleted, Depth: 1})

	// The parent continues it.
	p.Apply(ctx, "ses_root", event.ToolCallStart{ToolCallID: "cal_2", ToolName: "send_message", Title: "Message", RawInput: []byte(`{}`)})
	again := start("ses_c", "ses_root", "cal_2", 1)
	again.Metadata = map[string]any{"prompt": "third", "resumed": "parent"}
	p.Apply(ctx, "ses_root", again)
	p.Apply(ctx, "ses_root", w(event.RunStarted{SessionID: "ses_c", RunID: "run_3", AgentName: "worker"}))
	p.Apply(ctx, "ses_root", w(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText, Content: "fourth"}}))
	p.Apply(ctx, "ses_root", w(event.PartEnd{Index: 0}))
	p.Apply(ctx, "ses_root", event.SpawnSessionEnd{ChildSessionID: "ses_c", ParentSessionID: "ses_root", ToolCallID: "cal_2", StopReason: event.StopCompleted, Depth: 1, LastAssistantMessage: "fourth"})
	p.Apply(ctx, "ses_root", event.StreamComplete{Message: event.Message{Role: "assistant", Content: "ok"}})

	tr := build(t, rec.all())
	// The child's texts, in order, with the role of their message.
	var got []string
	for _, id := range tr.order {
		pt := tr.parts[id]
		if pt.SessionID != "ses_c" || pt.Type != sessiontree.PartText {
			continue
		}
		got = append(got, tr.msgs[pt.MessageID].Role+":"+tr.text[id])
	}
	want := []string{"user:do the job", "assistant:first", "user:also this", "assistant:second", "user:third", "assistant:fourth"}
	if len(got) != len(want) {
		t.Fatalf("child's texts %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("child's texts %q, want %q", got, want)
		}
	}
	if len(tr.created) != 1 {
		t.Errorf("sessions created: %v", tr.created)
	}
	if l, _ := tr.linkOf("ses_c"); l.CallID != "cal_1" && l.CallID != "cal_2" {
		t.Errorf("link %+v", l)
	}
	for _, pt := range tr.parts {
		if pt.CallID == "cal_2" && (pt.Child() != "ses_c" || pt.State.Status != sessiontree.ToolCompleted || pt.State.Output != "fourth") {
			t.Errorf("send_message part %+v", pt.State)
		}
	}
	if s := tr.sessions["ses_c"]; s.Status != session.StatusCompleted {
		t.Errorf("child %+v", s)
	}
	tr.checkNothingOpen(t)
}
