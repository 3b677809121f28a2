package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// A session's EventLog appends as AppendEvents does, into the same log
// and sequence; once the session leaves the store its log refuses with
// ErrNotFound, also after a session of the same id was made again (which
// the store's AppendEvents reaches); on a closed store, ErrClosed.
func TestEventLog(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	if _, err := st.EventLog(ctx, "ses_x"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("EventLog of no session: %v, want ErrNotFound", err)
	}
	mk := func() {
		t.Helper()
		if err := st.CreateSession(ctx, session.Session{ID: "ses_x"}); err != nil {
			t.Fatal(err)
		}
	}
	mk()
	l, err := st.EventLog(ctx, "ses_x")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AppendEvents(event.PartEnd{Index: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "ses_x", event.PartEnd{Index: 2}); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendEvents(event.PartEnd{Index: 3}, event.PartEnd{Index: 4}); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendEvents(nil); err == nil {
		t.Error("the log took a nil event")
	}
	recs, err := st.Events(ctx, "ses_x", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) || r.Event != (event.PartEnd{Index: i + 1}) || i > 0 && r.GlobalSeq <= recs[i-1].GlobalSeq {
			t.Errorf("record %d: %+v", i, r)
		}
	}

	if err := st.DeleteSession(ctx, "ses_x"); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendEvents(event.PartEnd{Index: 5}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("append to a deleted session's log: %v, want ErrNotFound", err)
	}
	mk()
	if err := l.AppendEvents(event.PartEnd{Index: 6}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("append to the log of a session made again: %v, want ErrNotFound", err)
	}
	if recs, _ := st.Events(ctx, "ses_x", 0); len(recs) != 0 {
		t.Fatalf("the session made again has %v", recs)
	}

	l, err = st.EventLog(ctx, "ses_x")
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := l.AppendEvents(event.PartEnd{Index: 7}); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("append on a closed store: %v, want ErrClosed", err)
	}
	if _, err := st.EventLog(ctx, "ses_x"); !errors.Is(err, session.ErrClosed) {
		t.Fatalf("EventLog on a closed store: %v, want ErrClosed", err)
	}
}

// A log found with a run's context counts in the run's account of writes
// as AppendEvents with that context does: after a lost write, its appends
// are refused and counted.
func TestEventLogAccount(t *testing.T) {
	st := memory.New()
	ctx, w := session.TrackWrites(context.Background(), session.WriteOptions{})
	if err := st.CreateSession(ctx, session.Session{ID: "ses_x"}); err != nil {
		t.Fatal(err)
	}
	l, err := st.EventLog(ctx, "ses_x")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AppendEvents(event.PartEnd{Index: 1}); err != nil || w.Failed() {
		t.Fatalf("append: %v, failed %v", err, w.Failed())
	}
	w.Lost(1, errors.New("disk full"))
	if err := l.AppendEvents(event.PartEnd{Index: 2}, event.PartEnd{Index: 3}); !errors.Is(err, session.ErrEarlierWriteLost) {
		t.Fatalf("append after a lost write: %v, want ErrEarlierWriteLost", err)
	}
	var ns *session.NotStoredError
	if !errors.As(w.Err(), &ns) || ns.Writes != 3 {
		t.Errorf("account: %v, want 3 writes lost", w.Err())
	}
}
