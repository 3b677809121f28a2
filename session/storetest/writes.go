package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// The account of a run's writes (session.TrackWrites): a write refused for
// the state of its session is no loss; a write the store cannot take is
// one, reported even when the call's error is all the caller sees.
func testLostWrites(t *testing.T, st session.Store) {
	ctx, writes := session.TrackWrites(context.Background(), session.WriteOptions{})
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	if err := st.CreateSession(ctx, newSession("ses_1", "", 0, base)); !errors.Is(err, session.ErrExists) {
		t.Fatalf("CreateSession of a taken id = %v, want ErrExists", err)
	}
	if err := st.UpdateSession(ctx, "ses_missing", func(*session.Session) {}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("UpdateSession of a missing session = %v, want ErrNotFound", err)
	}
	if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := writes.Err(); err != nil {
		t.Fatalf("writes refused for their sessions' state, or stored, counted as lost: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st.AppendEvents(ctx, "ses_1", event.PartEnd{}, event.PartEnd{})
	err := writes.Err()
	var ns *session.NotStoredError
	if !errors.As(err, &ns) || !errors.Is(err, session.ErrNotStored) || !errors.Is(err, session.ErrClosed) || ns.Writes != 2 {
		t.Fatalf("account after two events appended to a closed store = %v, want a *NotStoredError of 2 writes that wraps ErrClosed", err)
	}
}

// After a run lost a write, the store keeps none of its later writes (what
// is stored of a run is a prefix of what it wrote), but its Release, which
// ends its claim.
func testWritesAfterLoss(t *testing.T, st session.Store) {
	bg := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	if err := st.Claim(bg, "ses_1"); err != nil {
		t.Fatal(err)
	}
	ctx, writes := session.TrackWrites(bg, session.WriteOptions{})
	writes.Lost(1, errors.New("disk full"))

	if err := st.CreateSession(ctx, newSession("ses_2", "", 0, base)); !errors.Is(err, session.ErrEarlierWriteLost) {
		t.Errorf("CreateSession after a loss = %v, want ErrEarlierWriteLost", err)
	}
	if err := st.UpdateSession(ctx, "ses_1", func(s *session.Session) { s.Title = "changed" }); !errors.Is(err, session.ErrEarlierWriteLost) {
		t.Errorf("UpdateSession after a loss = %v, want ErrEarlierWriteLost", err)
	}
	// An append may be answered before it is taken (SQLite queues it):
	// nil or the refusal, never stored.
	if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{}); err != nil && !errors.Is(err, session.ErrEarlierWriteLost) {
		t.Errorf("AppendEvents after a loss = %v", err)
	}
	if err := st.AppendMessages(ctx, "ses_1", session.Message{ID: "msg_1", Message: model.UserText("x")}); err != nil && !errors.Is(err, session.ErrEarlierWriteLost) {
		t.Errorf("AppendMessages after a loss = %v", err)
	}
	if err := st.Release(ctx, "ses_1"); err != nil {
		t.Errorf("Release after a loss: %v", err)
	}
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}

	if _, err := st.GetSession(bg, "ses_2"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("the session created after the loss was stored: %v", err)
	}
	if s, err := st.GetSession(bg, "ses_1"); err != nil || s.Title != "title of ses_1" {
		t.Errorf("after a refused update: %+v, %v", s, err)
	}
	if recs, err := st.Events(bg, "ses_1", 0); err != nil || len(recs) != 0 {
		t.Errorf("events appended after the loss: %d stored, %v", len(recs), err)
	}
	if msgs, err := st.Messages(bg, "ses_1"); err != nil || len(msgs) != 0 {
		t.Errorf("messages appended after the loss: %d stored, %v", len(msgs), err)
	}
	if err := st.Claim(bg, "ses_1"); err != nil {
		t.Errorf("the release after the loss did not end the claim: %v", err)
	}
	var ns *session.NotStoredError
	if err := writes.Err(); !errors.As(err, &ns) || ns.Writes != 5 || ns.Err.Error() != "disk full" {
		t.Errorf("account = %v, want the first loss as the cause and the 4 refused writes counted (5 in all)", err)
	}
}
