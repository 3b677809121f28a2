package memory

// Tests that the appends and reads of one session's messages and events
// do not wait for another session's (issue 32: no process-wide lock on
// the run path). A regression makes the test wait forever (go test's
// -timeout reports it, with the goroutines' stacks), since a mutex wait
// has no signal to assert on.

import (
	"context"
	"errors"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// While session a's own lock is held (an append of a in progress) and the
// store's lock is held exclusively (a create or update of a session in
// progress), session b's messages and events are appended and read.
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
	st.mu.Lock()

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

	st.mu.Unlock()
	a.mu.Unlock()
	if err := st.AppendEvents(ctx, "a", event.PartEnd{Index: 2}); err != nil {
		t.Fatal(err)
	}
}

// A session removed while an append of it waits for its lock is gone for
// that append: it is refused (ErrNotFound), not kept in an entry nobody
// can reach; and a closed store refuses them all (ErrClosed).
func TestAppendsOfRemovedSessionsAreRefused(t *testing.T) {
	ctx := context.Background()
	st := New()
	if err := st.CreateSession(ctx, session.Session{ID: "a", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	a := st.sessions["a"]
	a.mu.Lock()
	appended := make(chan error, 1)
	go func() { appended <- st.AppendEvents(ctx, "a", event.PartEnd{Index: 1}) }()
	deleted := make(chan error, 1)
	go func() { deleted <- st.DeleteSession(ctx, "a") }()
	// The delete marks the entry gone under its lock: it waits for a.mu
	// like the append. Whichever gets it first, the append is either
	// kept and then deleted with the session, or refused.
	a.mu.Unlock()
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if err := <-appended; err != nil && !errors.Is(err, session.ErrNotFound) {
		t.Errorf("append racing a delete: %v, want nil or ErrNotFound", err)
	}
	if err := st.AppendEvents(ctx, "a", event.PartEnd{Index: 2}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("append after delete: %v, want ErrNotFound", err)
	}
	if _, err := st.Events(ctx, "a", 0); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("events after delete: %v, want ErrNotFound", err)
	}

	if err := st.CreateSession(ctx, session.Session{ID: "b", Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := st.AppendEvents(ctx, "b", event.PartEnd{Index: 1}); !errors.Is(err, session.ErrClosed) {
		t.Errorf("append after close: %v, want ErrClosed", err)
	}
	if _, err := st.Messages(ctx, "b"); !errors.Is(err, session.ErrClosed) {
		t.Errorf("messages after close: %v, want ErrClosed", err)
	}
}
