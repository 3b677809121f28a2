package durable

import (
	"context"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// PollEvery is how often a follower reads the store when the store sends
// no notices (session.EventNotifier), and the longest it waits for one
// when it does.
var PollEvery = 100 * time.Millisecond

// PollGap is the least time from one poll's start to the next one's that
// a notice starts. A tree whose running sessions all append (a team's
// window of 100 members) sent notices faster than a poll took: the
// follower read every running session ~170 times a second, a third of
// the database's statements in a 10,000-member run; the notices that
// come within the gap are answered by one poll. What a notice announces
// waits at most this long more.
var PollGap = 20 * time.Millisecond

// follower hands a root's tree, read from the store while it runs
// elsewhere, to a sink (session.TreeTail: the events of the root's log as
// they are, those of its descendants wrapped once relative to the root,
// as a run in this process emits them, in store-wide order).
type follower struct {
	tail *session.TreeTail
	st   session.Store
	sink event.Sink
	// polled, when set, is called after each poll has handed its events
	// on (an Approver shows the requests still open then).
	polled func()
}

func newFollower(st session.Store, root string, afterSeq int64, sink event.Sink) *follower {
	return &follower{tail: session.NewTreeTail(st, root, afterSeq), st: st, sink: sink}
}

// poll hands on every event committed since the last poll.
func (f *follower) poll(ctx context.Context) error {
	rs, err := f.tail.Poll(ctx)
	if err != nil {
		return err
	}
	for _, r := range rs {
		f.sink.Emit(r.Event)
	}
	if f.polled != nil {
		f.polled()
	}
	return nil
}

// follow polls until done is closed, then once more (the tree's last
// events are committed before its workflow ends). With a store that
// notifies, it reads after each notice of a session of the tree instead
// of on a timer (a child's first notice comes after its parent's, whose
// poll finds the child: notices of other sessions are passed over).
func (f *follower) follow(ctx context.Context, done <-chan struct{}) error {
	var notices <-chan string
	if n := session.Notifier(f.st); n != nil {
		sub, cancel := context.WithCancel(ctx)
		defer cancel()
		if ch, err := n.SubscribeEvents(sub); err == nil {
			notices = ch
		}
	}
	t := time.NewTicker(PollEvery)
	defer t.Stop()
	for {
		started := time.Now()
		if err := f.poll(ctx); err != nil {
			return err
		}
	wait:
		for {
			select {
			case <-done:
				return f.poll(ctx)
			case <-ctx.Done():
				return ctx.Err()
			case id, ok := <-notices:
				if !ok {
					notices = nil
					break wait
				}
				if f.tail.Has(id) {
					if err := waitGap(ctx, done, PollGap-time.Since(started)); err != nil {
						return err
					}
					notices = drainNotices(notices)
					break wait
				}
			case <-t.C:
				break wait
			}
		}
	}
}

// waitGap waits d (nothing when d ≤ 0), or until done is closed (the
// poll after it reads the tree's last events at once), or ctx ends.
func waitGap(ctx context.Context, done <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// drainNotices takes the notices that are ready without waiting, and
// returns the channel (nil once it is closed). They were sent after their
// commits: the poll that follows reads what they announce, so one poll
// answers them all. Without it a tree of many running sessions (a team's
// window of 100 members) was read once per notice, each poll reading
// every running session.
func drainNotices(notices <-chan string) <-chan string {
	for {
		select {
		case _, ok := <-notices:
			if !ok {
				return nil
			}
		default:
			return notices
		}
	}
}
