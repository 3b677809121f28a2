package durable

import (
	"context"
	"encoding/json"
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
