package memory

// Tests that the appends and reads of one session's messages and events
// do not wait for another session's (issue 32: no process-wide lock on
// the run path). A regression makes the test wait forever (go test's
// -timeout reports it, with the goroutines' stacks), since a mutex wait
// has no signal to assert on.

import (
	"context"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// While session a's own lock is held (an append of a in progress) and the
// store's lock is held shared (any append or read in progress), session
// b's messages and events are appended and read.
func TestAppendsOfOneSessionDoNotWaitForAnother(t *testing.T) {
	ctx := context.Background()
	st := New()
	for _, id := range []string{"a", "b"} {
		if err := st.CreateSession(ctx, session.Session{ID: id, Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	a := st.sessions["a"]
	a.mu.Lock()
	st.mu.RLock()

	if err := st.AppendEvents(ctx, "b", event.PartEnd{Index: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, "b", session.Message{ID: "msg_1", Message: model.UserText("hi")}); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Events(ctx, "b", 0)
	if err != nil || len(recs) != 1 {
		t.Errorf("Events(b) while a was locked: %d records, %v", len(recs), err)
	}
	msgs, err := st.Messages(ctx, "b")
	if err != nil || len(msgs) != 1 {
		t.Errorf("Messages(b) while a was locked: %d messages, %v", len(msgs), err)
	}

	st.mu.RUnlock()
	a.mu.Unlock()
	if err := st.AppendEvents(ctx, "a", event.PartEnd{Index: 2}); err != nil {
		t.Fatal(err)
	}
}
