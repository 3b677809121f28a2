package durable

import (
	"context"
	"slices"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// PollEvery is how often a follower reads the store when the store sends
// no notices (session.EventNotifier), and the longest it waits for one
// when it does.
var PollEvery = 100 * time.Millisecond

// follower rebuilds a root's live stream from the store while its tree
// runs elsewhere: the events of the root's log as they are, those of its
// descendants wrapped once relative to the root (as a run in this process
// emits them, see session.ReplayTree).
//
// Each poll reads the sessions parents first (a child is found by its
// spawn_session_start), and hands what it read on in store-wide order
// (GlobalSeq). Parents first makes the causal order hold across polls: a
// child's events are committed before its parent's spawn_session_end
// (the parent writes it once the child's workflow ended), so a poll that
// reads the end reads, later in the same poll, every event of the child
// before it; and a child is read only after its start was.
type follower struct {
	st    session.Store
	root  string
	sink  event.Sink
	order []string         // the sessions found, parents first
	seen  map[string]int64 // session -> last seq handed on
	info  map[string]event.SpawnSessionStart
	paths map[string][]string
	// polled, when set, is called after each poll has handed its events
	// on (an Approver shows the requests still open then).
	polled func()
}

func newFollower(st session.Store, root string, afterSeq int64, sink event.Sink) *follower {
	return &follower{st: st, root: root, sink: sink, order: []string{root},
		seen: map[string]int64{root: afterSeq}, info: map[string]event.SpawnSessionStart{}, paths: map[string][]string{root: nil}}
}

// poll hands on every event committed since the last poll.
func (f *follower) poll(ctx context.Context) error {
	var batch []session.Record
	for i := 0; i < len(f.order); i++ {
		sid := f.order[i]
		recs, err := f.st.Events(ctx, sid, f.seen[sid])
		if err != nil {
			return err
		}
		for _, r := range recs {
			f.seen[sid] = r.Seq
			if sp, ok := r.Event.(event.SpawnSessionStart); ok {
				if _, known := f.info[sp.ChildSessionID]; !known {
					f.info[sp.ChildSessionID] = sp
					f.paths[sp.ChildSessionID] = append(slices.Clone(f.paths[sid]), sp.ChildSessionID)
					f.order = append(f.order, sp.ChildSessionID)
				}
			}
		}
		batch = append(batch, recs...)
	}
	slices.SortStableFunc(batch, func(a, b session.Record) int {
		switch {
		case a.GlobalSeq < b.GlobalSeq:
			return -1
		case a.GlobalSeq > b.GlobalSeq:
			return 1
		}
		return 0
	})
	for _, r := range batch {
		f.sink.Emit(f.wrap(r))
	}
	if f.polled != nil {
		f.polled()
	}
	return nil
}

func (f *follower) wrap(r session.Record) event.Event {
	if r.SessionID == f.root {
		return r.Event
	}
	sp := f.info[r.SessionID]
	return event.Subagent{
		SourceName: sp.SourceName, SourceType: sp.SourceType, Depth: sp.Depth,
		ChildSessionID: r.SessionID, ParentSessionID: sp.ParentSessionID, ToolCallID: sp.ToolCallID,
		Path: f.paths[r.SessionID], Event: r.Event,
	}
}

// follow polls until done is closed, then once more (the tree's last
// events are committed before its workflow ends). With a store that
// notifies, it reads after each notice instead of on a timer.
func (f *follower) follow(ctx context.Context, done <-chan struct{}) error {
	var notices <-chan string
	if n := notifier(f.st); n != nil {
		sub, cancel := context.WithCancel(ctx)
		defer cancel()
		if ch, err := n.SubscribeEvents(sub); err == nil {
			notices = ch
		}
	}
	t := time.NewTicker(PollEvery)
	defer t.Stop()
	for {
		if err := f.poll(ctx); err != nil {
			return err
		}
		select {
		case <-done:
			return f.poll(ctx)
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-notices:
			if !ok {
				notices = nil
			}
		case <-t.C:
		}
	}
}

// notifier is st as a session.EventNotifier, looking through wrappers
// that say what they wrap (Unwrap() session.Store, as the CLI's store
// that deletes transcripts with their sessions); nil when none is one.
func notifier(st session.Store) session.EventNotifier {
	for st != nil {
		if n, ok := st.(session.EventNotifier); ok {
			return n
		}
		u, ok := st.(interface{ Unwrap() session.Store })
		if !ok {
			return nil
		}
		st = u.Unwrap()
	}
	return nil
}
