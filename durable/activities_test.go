package durable

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// A write whose outcome the workflow could not learn is sent again with
// Check: what the first one wrote is not written twice, what it did not
// write is.
func TestWriteAgainWritesOnce(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_1", AgentName: "a", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	acts := &Activities{Store: st}
	env.RegisterActivityWithOptions(acts, activityOptions())
	evs := []json.RawMessage{encode(event.RunStarted{SessionID: "ses_1", RunID: "run_1", AgentName: "a"}), encode(event.PartEnd{Index: 0})}
	msgs := []session.Message{{ID: "msg_1", SessionID: "ses_1", CreatedAt: now, Message: model.UserText("hi")}}

	// The first attempt wrote the messages and the first event only.
	if err := st.AppendMessages(ctx, "ses_1", msgs...); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "ses_1", event.RunStarted{SessionID: "ses_1", RunID: "run_1", AgentName: "a"}); err != nil {
		t.Fatal(err)
	}
	p := Pending{SessionID: "ses_1", Events: evs, Messages: msgs, Check: true}
	for range 2 { // and once more: nothing changes
		v, err := env.ExecuteActivity(actWrite, p)
		if err != nil {
			t.Fatal(err)
		}
		var after int64
		if err := v.Get(&after); err != nil || after != 2 {
			t.Fatalf("after = %d, %v", after, err)
		}
	}
	recs, _ := st.Events(ctx, "ses_1", 0)
	if len(recs) != 2 || recs[1].Event.Kind() != event.KindPartEnd {
		t.Errorf("log = %d events", len(recs))
	}
	got, _ := st.Messages(ctx, "ses_1")
	if len(got) != 1 {
		t.Errorf("conversation = %d messages, want 1", len(got))
	}
}

// A turn that runs again after its first attempt stored its message is not
// sent to the model again (Lookup is nil: asking for the model would
// panic); its events are rebuilt from the message when the first attempt
// died before writing them, and not written twice when it did not.
func TestTurnAgainDoesNotCallTheModel(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_1", AgentName: "a", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	acts := &Activities{Store: st}
	answer := model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "42"}}}
	// The first attempt stored the message, and died.
	if err := st.AppendMessages(ctx, "ses_1", session.Message{ID: "msg_turn", SessionID: "ses_1", CreatedAt: now, Message: answer}); err != nil {
		t.Fatal(err)
	}
	in := TurnInput{Pending: Pending{SessionID: "ses_1"}, Agent: "a", MessageID: "msg_turn", CreatedAt: now}
	for i := range 2 {
		out, err := acts.turn(ctx, in, true)
		if err != nil {
			t.Fatal(err)
		}
		if out.Turn.Message.Text() != "42" || !out.Turn.Stored || out.Turn.Finish != model.FinishStop || out.Events != 3 {
			t.Fatalf("attempt %d: %+v", i+2, out)
		}
	}
	recs, _ := st.Events(ctx, "ses_1", 0)
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, string(r.Event.Kind()))
	}
	if got := strings.Join(kinds, ","); got != "part_start,part_delta,part_end" {
		t.Errorf("log = %s", got)
	}
	if msgs, _ := st.Messages(ctx, "ses_1"); len(msgs) != 1 {
		t.Errorf("conversation = %d messages", len(msgs))
	}
}
