// Conformance tests of messages.

package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

func sampleMessages(sid string) []session.Message {
	t0 := base.Add(time.Minute)
	return []session.Message{
		{ID: "msg_1", SessionID: sid, AgentName: "a", CreatedAt: t0, Message: model.UserText("hello")},
		{ID: "msg_2", SessionID: sid, AgentName: "a", CreatedAt: t0.Add(time.Second), Message: model.Message{
			Role: model.RoleAssistant,
			Parts: []model.Part{
				{Kind: model.PartThinking, Text: "let me think"},
				{Kind: model.PartText, Text: "I will call a tool"},
				{Kind: model.PartToolCall, ToolCallID: "cal_1", ToolName: "task", Args: json.RawMessage(`{"agent_or_team":"x","prompt":"p"}`)},
			},
		}},
		{ID: "msg_3", SessionID: sid, AgentName: "a", CreatedAt: t0.Add(2 * time.Second), Message: model.Message{
			Role:  model.RoleTool,
			Parts: []model.Part{{Kind: model.PartToolResult, ToolCallID: "cal_1", ToolName: "task", Text: "failed", IsError: true}},
		}},
		{ID: "msg_4", SessionID: sid, AgentName: "a", CreatedAt: t0.Add(3 * time.Second), Message: model.Message{
			Role: model.RoleUser, Synthetic: true, Parts: []model.Part{{Kind: model.PartText, Text: "injected"}},
		}},
		{ID: "msg_5", SessionID: sid, CreatedAt: t0.Add(4 * time.Second), Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{}}},
	}
}

func sameMessages(t *testing.T, got, want []session.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("message %d: CreatedAt %v, want %v", i, g.CreatedAt, w.CreatedAt)
		}
		g.CreatedAt, w.CreatedAt = time.Time{}, time.Time{}
		if gj, wj := jsonOf(t, g), jsonOf(t, w); gj != wj {
			t.Errorf("message %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
}

func testMessages(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	mustCreate(t, st, newSession("ses_2", "", 0, base))
	msgs := sampleMessages("ses_1")
	if err := st.AppendMessages(ctx, "ses_1", msgs[:2]...); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, "ses_2", session.Message{ID: "msg_x", Message: model.UserText("other")}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, "ses_1", msgs[2]); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, "ses_1", msgs[3:]...); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, "ses_1"); err != nil {
		t.Fatalf("appending no messages: %v", err)
	}
	got, err := st.Messages(ctx, "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, got, msgs)
	// SessionID is the session appended to.
	other, err := st.Messages(ctx, "ses_2")
	if err != nil || len(other) != 1 || other[0].SessionID != "ses_2" || other[0].Text() != "other" {
		t.Errorf("Messages(ses_2) = %+v, %v", other, err)
	}
	empty, err := st.Messages(ctx, "ses_2x")
	if !errors.Is(err, session.ErrNotFound) || len(empty) != 0 {
		t.Errorf("Messages of an unknown session = %v, %v", empty, err)
	}
	mustCreate(t, st, newSession("ses_3", "", 0, base))
	none, err := st.Messages(ctx, "ses_3")
	if err != nil || len(none) != 0 {
		t.Errorf("Messages of a new session = %v, %v", none, err)
	}
}

func testMessageIsolation(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	msgs := sampleMessages("ses_1")
	want := jsonOf(t, msgs[1])
	if err := st.AppendMessages(ctx, "ses_1", msgs[1]); err != nil {
		t.Fatal(err)
	}
	msgs[1].Parts[1].Text = "changed"
	msgs[1].Parts[2].Args[2] = 'X'
	got, _ := st.Messages(ctx, "ses_1")
	got[0].CreatedAt = sampleMessages("ses_1")[1].CreatedAt
	if g := jsonOf(t, got[0]); g != want {
		t.Fatalf("stored message changed with the caller's:\n got %s\nwant %s", g, want)
	}
	got[0].Parts[1].Text = "changed"
	got[0].Parts[2].Args[2] = 'X'
	again, _ := st.Messages(ctx, "ses_1")
	again[0].CreatedAt = got[0].CreatedAt
	if g := jsonOf(t, again[0]); g != want {
		t.Fatalf("stored message changed with a reader's copy:\n got %s\nwant %s", g, want)
	}
}
