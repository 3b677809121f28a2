package session

import (
	"cmp"
	"context"
	"slices"

	"github.com/agentpool/agentpool/event"
)

// TreeTail reads a root's tree from the store while it runs elsewhere (a
// Temporal worker, another process on the database) and gives back the
// one stream a consumer of the run in this process would have seen: the
// root's events as they are, its descendants' wrapped once relative to
// the root (as ReplayTree wraps them), in store-wide order.
//
// Each Poll reads the sessions parents first: a child is found by its
// spawn_session_start, and is read later in the same poll. That makes the
// causal order hold across polls: a child's events are committed before
// its parent's spawn_session_end (the parent writes it once the child
// ended), so a poll that reads the end reads every event of the child
// before it; and a child is read only after its start was.
//
// With a store that reads several sessions at once (ManyEventsReader: one
// query on PostgreSQL, where each session cost one or two), a poll after
// the first reads them in rounds: the tree's sessions in one read, then
// the children that read found, and so on; each round is one snapshot,
// so a child known before the round that reads its end is read in it.
//
// The same order lets a poll stop reading a child whose end it has read:
// the poll reads the child after its parent's spawn_session_end, so it
// hands on the child's last events, and the child's log has no more.
// A tree of thousands of children is then read a session per child still
// running, not a session per child ever started (a 10,000-member team's
// follower read every member's log at each poll, BENCHMARKS.md). A child
// started again (its parent's spawn_session_start once more: a resumed
// child) is read again.
//
// A TreeTail is not safe for concurrent use: one follower polls it.
type TreeTail struct {
	st    Store
	root  string
	order []string         // the sessions read at each poll, parents first
	seen  map[string]int64 // session -> last seq handed on
	wrap  map[string]event.Subagent
	// done are the children found that ended: no longer in order.
	done map[string]bool
	// polled: a poll succeeded (the later ones may read several sessions
	// at once, ManyEventsReader).
	polled bool
}

// NewTreeTail returns a tail of root's tree whose first Poll gives the
// root's events after afterSeq (and every event of the children those
// start, from their logs' starts).
func NewTreeTail(st Store, root string, afterSeq int64) *TreeTail {
	return &TreeTail{st: st, root: root, order: []string{root},
		seen: map[string]int64{root: afterSeq}, wrap: map[string]event.Subagent{root: {}}, done: map[string]bool{}}
}

// Root is the id of the tail's root.
func (t *TreeTail) Root() string { return t.root }

// Has reports whether id is the root or a descendant the tail has found:
// a notice of an append to id (EventNotifier) concerns this tail.
func (t *TreeTail) Has(id string) bool {
	_, ok := t.wrap[id]
	return ok
}

// Poll returns what was committed to the tree since the last poll, in
// store-wide order (GlobalSeq); each Replayed's Event is the event as the
// root's consumer sees it. A failed read returns the error and nothing:
// the next Poll reads again from where the failed one started for the
// sessions it did not finish. Path slices of the wrapped events are
// shared between the events of a session: consumers must not modify them.
func (t *TreeTail) Poll(ctx context.Context) ([]Replayed, error) {
	var batch []Record
	ended := map[string]bool{} // children whose end this poll read
	if m := ManyReader(t.st); m != nil && t.polled {
		// The sessions to read, in one read each round: the tree's, then
		// the children the round found (parents first, as below). One
		// snapshot a round: a child known before it is read in the round
		// that reads its end.
		read := slices.Clone(t.order)
		for len(read) > 0 {
			after := make(map[string]int64, len(read))
			for _, sid := range read {
				after[sid] = t.seen[sid]
			}
			recs, err := m.EventsOfMany(ctx, after)
			if err != nil {
				t.unread(batch)
				return nil, err
			}
			n := len(t.order)
			for _, r := range recs {
				t.take(r, ended)
			}
			batch = append(batch, recs...)
			read = slices.Clone(t.order[n:])
		}
	} else {
		// One session at a time (the first poll so: a root that does not
		// exist is an error).
		for i := 0; i < len(t.order); i++ {
			sid := t.order[i]
			recs, err := t.st.Events(ctx, sid, t.seen[sid])
			if err != nil {
				// Forget the batch: its sessions are read again from the
				// seqs they had, as nothing of it was handed on.
				t.unread(batch)
				return nil, err
			}
			for _, r := range recs {
				t.take(r, ended)
			}
			batch = append(batch, recs...)
		}
		t.polled = true
	}
	if len(ended) > 0 {
		// Read in this poll after their ends (later in order than their
		// parents): nothing of them is left to read.
		t.order = slices.DeleteFunc(t.order, func(sid string) bool { return ended[sid] })
		for sid := range ended {
			t.done[sid] = true
		}
	}
	sortByGlobalSeq(batch)
	out := make([]Replayed, len(batch))
	for i, r := range batch {
		out[i] = Replayed{Record: r, Event: r.Event}
		if r.SessionID != t.root {
			out[i].Event = wrapDescendant(t.wrap[r.SessionID], r.Event)
		}
	}
	return out, nil
}

// take records r, read from its session's log in order: the children its
// start finds (or finds again) are read after it, and a child whose end
// it is goes into ended.
func (t *TreeTail) take(r Record, ended map[string]bool) {
	t.seen[r.SessionID] = r.Seq
	switch sp := r.Event.(type) {
	case event.SpawnSessionStart:
		switch {
		case !t.Has(sp.ChildSessionID):
			t.wrap[sp.ChildSessionID] = event.Subagent{
				SourceName: sp.SourceName, SourceType: sp.SourceType, Depth: sp.Depth,
				ChildSessionID: sp.ChildSessionID, ParentSessionID: sp.ParentSessionID, ToolCallID: sp.ToolCallID,
				Path: append(slices.Clone(t.wrap[r.SessionID].Path), sp.ChildSessionID),
			}
			t.order = append(t.order, sp.ChildSessionID)
		case t.done[sp.ChildSessionID]:
			delete(t.done, sp.ChildSessionID)
			t.order = append(t.order, sp.ChildSessionID)
		}
		delete(ended, sp.ChildSessionID)
	case event.SpawnSessionEnd:
		if sp.ChildSessionID != t.root && t.Has(sp.ChildSessionID) {
			ended[sp.ChildSessionID] = true
		}
	}
}

// unread puts the seqs of the sessions of batch back to before it. The
// children it found stay found (their starts are read again and known).
func (t *TreeTail) unread(batch []Record) {
	for _, r := range batch {
		if r.Seq-1 < t.seen[r.SessionID] {
			t.seen[r.SessionID] = r.Seq - 1
		}
	}
}

// wrapDescendant is ev, an event a descendant's session produced, as the
// root's consumer sees it: in w (the descendant's wrapper, Event unset).
// An event a log holds wrapped already (written by an older producer)
// gets w's path prefixed instead: never wrapped twice (docs/spec/EVENTS.md
// invariant 5).
func wrapDescendant(w event.Subagent, ev event.Event) event.Event {
	if inner, ok := ev.(event.Subagent); ok {
		inner.Path = append(slices.Clone(w.Path), inner.Path...)
		return inner
	}
	w.Event = ev
	return w
}

// sortByGlobalSeq puts records of several logs in store-wide order.
func sortByGlobalSeq(recs []Record) {
	slices.SortStableFunc(recs, func(a, b Record) int { return cmp.Compare(a.GlobalSeq, b.GlobalSeq) })
}

// Notifier returns st as an EventNotifier, looking through wrappers that
// say what they wrap (an Unwrap() Store method, as the CLI's store that
// deletes transcripts with their sessions); nil when none is one.
func Notifier(st Store) EventNotifier {
	for st != nil {
		if n, ok := st.(EventNotifier); ok {
			return n
		}
		u, ok := st.(interface{ Unwrap() Store })
		if !ok {
			return nil
		}
		st = u.Unwrap()
	}
	return nil
}
