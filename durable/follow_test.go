package durable

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// The notices ready when a poll is due are taken at once (the poll
// answers them all); a closed channel is given back as nil.
func TestDrainNotices(t *testing.T) {
	ch := make(chan string, 3)
	ch <- "a"
	ch <- "b"
	if got := drainNotices(ch); got == nil || len(ch) != 0 {
		t.Errorf("drainNotices left %d notices (channel %v)", len(ch), got)
	}
	ch <- "c"
	close(ch)
	if got := drainNotices(ch); got != nil {
		t.Error("a closed channel was given back")
	}
}

// noticeStore is a store whose notices the test sends (ch).
type noticeStore struct {
	session.Store
	ch chan string
}

func (n noticeStore) SubscribeEvents(context.Context) (<-chan string, error) { return n.ch, nil }

// Notices that come within PollGap of a poll's start are answered by one
// poll at the gap's end; a notice after a quiet spell is answered at
// once.
func TestFollowerPollsOncePerGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // a failed check: the follower returns
		// Buffered, as the store's subscription keeps the notices the
		// follower has not taken yet.
		st := noticeStore{memory.New(), make(chan string, 16)}
		defer st.Close()
		now := time.Now()
		if err := st.CreateSession(ctx, session.Session{ID: "ses_root", AgentName: "crew", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		var (
			mu    sync.Mutex
			polls []time.Duration // when each poll ended, from the start
		)
		taken := func() []time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(polls)
		}
		f := newFollower(st, "ses_root", 0, event.SinkFunc(func(event.Event) {}))
		f.polled = func() {
			mu.Lock()
			polls = append(polls, time.Since(now))
			mu.Unlock()
		}
		done := make(chan struct{})
		followed := make(chan error, 1)
		go func() { followed <- f.follow(ctx, done) }()
		synctest.Wait()
		if got := taken(); len(got) != 1 {
			t.Fatalf("polls at %v before any notice, want one", got)
		}
		// Five notices a millisecond apart, the first at once.
		for range 5 {
			st.ch <- "ses_root"
			<-time.After(time.Millisecond)
		}
		synctest.Wait()
		<-time.After(PollGap)
		synctest.Wait()
		if got := taken(); len(got) != 2 || got[1] != PollGap {
			t.Fatalf("polls at %v after five notices within the gap, want one more at %v", got, PollGap)
		}
		// A notice half a gap after the timer's poll (PollEvery) waits
		// for the gap's end.
		<-time.After(PollEvery - PollGap - 5*time.Millisecond + PollGap/2)
		st.ch <- "ses_root"
		synctest.Wait()
		<-time.After(PollGap)
		synctest.Wait()
		if got := taken(); len(got) != 4 || got[2] != PollEvery || got[3] != PollEvery+PollGap {
			t.Fatalf("polls at %v, want the timer's at %v and the notice's at %v", got, PollEvery, PollEvery+PollGap)
		}
		// The timer polls at 2×PollEvery; a notice half-way to the next
		// (past the gap) is answered at once.
		<-time.After(2*PollEvery + PollEvery/2 - (PollEvery + 30*time.Millisecond))
		st.ch <- "ses_root"
		synctest.Wait()
		if got, want := taken(), 2*PollEvery+PollEvery/2; len(got) != 6 || got[4] != 2*PollEvery || got[5] != want {
			t.Fatalf("polls at %v, want the timer's at %v and the notice's at once at %v", got, 2*PollEvery, want)
		}
		close(done)
		if err := <-followed; err != nil {
			t.Fatal(err)
		}
	})
}
