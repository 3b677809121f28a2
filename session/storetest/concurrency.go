// Conformance tests of reads after writes and of concurrent writers.

package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

func testReadYourWrites(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	for i := range 20 {
		if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{Index: i}); err != nil {
			t.Fatal(err)
		}
		recs, err := st.Events(ctx, "ses_1", int64(i))
		if err != nil || len(recs) != 1 || recs[0].Seq != int64(i+1) {
			t.Fatalf("Events right after append %d = %+v, %v", i, recs, err)
		}
		if err := st.AppendMessages(ctx, "ses_1", session.Message{ID: fmt.Sprintf("msg_%d", i), Message: model.UserText("m")}); err != nil {
			t.Fatal(err)
		}
		msgs, err := st.Messages(ctx, "ses_1")
		if err != nil || len(msgs) != i+1 {
			t.Fatalf("Messages right after append %d = %d, %v", i, len(msgs), err)
		}
	}
	// A child created right after its parent's events is visible at once.
	mustCreate(t, st, newSession("ses_2", "ses_1", 1, base))
	if _, err := st.GetSession(ctx, "ses_2"); err != nil {
		t.Fatal(err)
	}
}

func testConcurrentWriters(t *testing.T, st session.Store) {
	ctx := context.Background()
	const (
		writers = 8
		perW    = 200
	)
	mustCreate(t, st, newSession("ses_shared", "", 0, base))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		sid := fmt.Sprintf("ses_w%d", w)
		wg.Go(func() {
			<-start
			// Each writer creates its own session concurrently with the others.
			if err := st.CreateSession(ctx, newSession(sid, "ses_shared", 1, base.Add(time.Duration(w)))); err != nil {
				t.Error(err)
				return
			}
			for i := 0; i < perW; {
				n := 1 + (i+w)%4 // batches of 1..4 events
				if i+n > perW {
					n = perW - i
				}
				own := make([]event.Event, n)
				shared := make([]event.Event, n)
				for k := range n {
					own[k] = event.PartDelta{Index: i + k, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: sid}}
					shared[k] = event.Custom{EventType: sid, EventData: map[string]any{"i": float64(i + k)}}
				}
				if err := st.AppendEvents(ctx, sid, own...); err != nil {
					t.Error(err)
					return
				}
				if err := st.AppendEvents(ctx, "ses_shared", shared...); err != nil {
					t.Error(err)
					return
				}
				i += n
				if i%50 < n {
					if err := st.AppendMessages(ctx, sid, session.Message{ID: fmt.Sprintf("msg_%s_%d", sid, i), Message: model.UserText(sid)}); err != nil {
						t.Error(err)
						return
					}
					if err := st.UpdateSession(ctx, sid, func(s *session.Session) { s.Usage.OutputTokens++ }); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	// Readers run alongside the writers.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r == 0 {
					if _, err := st.Events(ctx, "ses_shared", 0); err != nil {
						t.Error(err)
						return
					}
				} else {
					if _, err := st.ListSessions(ctx, session.ListOptions{ParentID: "ses_shared"}); err != nil {
						t.Error(err)
						return
					}
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	close(start)
	wg.Wait()
	close(stop)
	readers.Wait()
	if t.Failed() {
		return
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for w := range writers {
		sid := fmt.Sprintf("ses_w%d", w)
		recs, err := st.Events(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != perW {
			t.Fatalf("%s: %d events, want %d", sid, len(recs), perW)
		}
		for i, r := range recs {
			if r.Seq != int64(i+1) || r.Event.(event.PartDelta).Index != i {
				t.Fatalf("%s record %d: seq %d index %d", sid, i, r.Seq, r.Event.(event.PartDelta).Index)
			}
			if seen[r.GlobalSeq] {
				t.Fatalf("global seq %d used twice", r.GlobalSeq)
			}
			seen[r.GlobalSeq] = true
		}
		msgs, err := st.Messages(ctx, sid)
		if err != nil || len(msgs) != perW/50 {
			t.Errorf("%s: %d messages, %v; want %d", sid, len(msgs), err, perW/50)
		}
		s, err := st.GetSession(ctx, sid)
		if err != nil || s.Usage.OutputTokens != perW/50 {
			t.Errorf("%s: %d updates kept, %v; want %d", sid, s.Usage.OutputTokens, err, perW/50)
		}
	}
	recs, err := st.Events(ctx, "ses_shared", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != writers*perW {
		t.Fatalf("shared log has %d events, want %d", len(recs), writers*perW)
	}
	next := map[string]float64{}
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("shared record %d has seq %d", i, r.Seq)
		}
		if i > 0 && r.GlobalSeq <= recs[i-1].GlobalSeq {
			t.Fatalf("shared record %d: global seq not increasing", i)
		}
		if seen[r.GlobalSeq] {
			t.Fatalf("global seq %d used twice", r.GlobalSeq)
		}
		seen[r.GlobalSeq] = true
		c := r.Event.(event.Custom)
		if c.EventData["i"] != next[c.EventType] {
			t.Fatalf("shared log: %s event %v where %v was next", c.EventType, c.EventData["i"], next[c.EventType])
		}
		next[c.EventType]++
	}
	kids, _ := st.ListSessions(ctx, session.ListOptions{ParentID: "ses_shared"})
	if len(kids) != writers {
		t.Errorf("%d children, want %d", len(kids), writers)
	}
}
