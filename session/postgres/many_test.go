package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// EventsOfMany reads the events of several sessions after their seqs in
// one read, in store-wide order; a session that does not exist has none.
func TestEventsOfMany(t *testing.T) {
	st := open(t)
	ctx := context.Background()
	for _, id := range []string{"ses_a", "ses_b", "ses_c"} {
		if err := st.CreateSession(ctx, session.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"ses_a", "ses_b", "ses_a", "ses_c", "ses_b"} {
		if err := st.AppendEvents(ctx, id, event.PartEnd{}); err != nil {
			t.Fatal(err)
		}
	}
	if m := session.ManyReader(st); m == nil {
		t.Fatal("the PostgreSQL store reads no several sessions at once")
	}
	recs, err := st.EventsOfMany(ctx, map[string]int64{"ses_a": 1, "ses_b": 0, "ses_missing": 0})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, r := range recs {
		got = append(got, r.SessionID)
		if i > 0 && r.GlobalSeq <= recs[i-1].GlobalSeq {
			t.Errorf("record %d is out of store-wide order", i)
		}
	}
	// ses_a after its first event (its second), ses_b's two, in order.
	if want := []string{"ses_b", "ses_a", "ses_b"}; !slices.Equal(got, want) {
		t.Errorf("sessions of the records: %v, want %v", got, want)
	}
	if recs, err := st.EventsOfMany(ctx, nil); err != nil || len(recs) != 0 {
		t.Errorf("no sessions: %d records, %v", len(recs), err)
	}
}
