package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
)

// GlobalSeq is the commit order: a follower that reads "GlobalSeq > the
// last it saw" while two stores (two processes) append from many
// goroutines sees every event exactly once, in GlobalSeq order, and each
// session's events in seq order.
func TestGlobalSeqIsCommitOrder(t *testing.T) {
	name, _ := pgtest.Schema(t)
	a, b := openIn(t, name), openIn(t, name)
	ctx := context.Background()
	const (
		writers = 6
		perW    = 60
	)
	for w := range writers {
		if err := a.CreateSession(ctx, session.Session{ID: fmt.Sprintf("ses_%d", w), Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var (
		seen     []session.Record
		follower sync.WaitGroup
		ferr     error
	)
	follower.Go(func() {
		var last int64
		for {
			// A read that finds nothing ends the follower only if it
			// began after every writer was done: one that began earlier
			// may have missed the last commits.
			writersDone := false
			select {
			case <-stop:
				writersDone = true
			default:
			}
			recs, err := b.EventsAfter(ctx, last, 0)
			if err != nil {
				ferr = err
				return
			}
			for _, r := range recs {
				if r.GlobalSeq <= last {
					ferr = fmt.Errorf("GlobalSeq %d after %d", r.GlobalSeq, last)
					return
				}
				last = r.GlobalSeq
				seen = append(seen, r)
			}
			if writersDone && len(recs) == 0 {
				return
			}
		}
	})
	var wg sync.WaitGroup
	for w := range writers {
		st := a
		if w%2 == 1 {
			st = b
		}
		sid := fmt.Sprintf("ses_%d", w)
		wg.Go(func() {
			for i := 0; i < perW; i += 2 {
				if err := st.AppendEvents(ctx, sid, event.PartEnd{Index: i}, event.PartEnd{Index: i + 1}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	follower.Wait()
	if ferr != nil {
		t.Fatal(ferr)
	}
	if len(seen) != writers*perW {
		t.Fatalf("the follower saw %d events, want %d", len(seen), writers*perW)
	}
	next := map[string]int{}
	for _, r := range seen {
		i := r.Event.(event.PartEnd).Index
		if i != next[r.SessionID] || r.Seq != int64(i+1) {
			t.Fatalf("%s: event %d (seq %d) where %d was next", r.SessionID, i, r.Seq, next[r.SessionID])
		}
		next[r.SessionID]++
	}
}

// What the contiguity costs: appends from many goroutines of two stores
// commit one at a time; the group commit keeps that from being one
// transaction per call. Logged for the record, bounded generously.
func TestAppendThroughput(t *testing.T) {
	name, _ := pgtest.Schema(t)
	a, b := openIn(t, name), openIn(t, name)
	ctx := context.Background()
	const (
		goroutines = 16
		per        = 50
	)
	for g := range goroutines {
		if err := a.CreateSession(ctx, session.Session{ID: fmt.Sprintf("ses_%d", g)}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for g := range goroutines {
		st := []*postgres.Store{a, b}[g%2]
		wg.Go(func() {
			for i := range per {
				if err := st.AppendEvents(ctx, fmt.Sprintf("ses_%d", g), event.PartEnd{Index: i}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	n := goroutines * per
	t.Logf("%d appends from %d goroutines of 2 stores in %v: %.0f appends/s", n, goroutines, d, float64(n)/d.Seconds())
	if d > time.Minute {
		t.Errorf("%d appends took %v", n, d)
	}
}
