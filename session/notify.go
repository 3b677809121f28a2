package session

import "context"

// EventNotifier is implemented by a store whose appends other processes
// make and this one must see as they happen (a database several machines
// share). A follower of a live session (a root run whose children run on
// other machines, `sessions tree --watch`) reads the new events with
// Events after each notice instead of polling; with a store that does not
// implement it, followers poll.
type EventNotifier interface {
	// SubscribeEvents returns a channel that receives the id of a session
	// after events were appended to it by any process on the store. Notices
	// may be coalesced (one for several appends) but never lost: after an
	// append that happened after SubscribeEvents returned, at least one
	// notice for that session follows. The channel is closed when ctx ends
	// or the store is closed.
	SubscribeEvents(ctx context.Context) (<-chan string, error)
}

// ManyEventsReader is implemented by a store that reads the events of
// several sessions in one read, from one snapshot of the store (one
// statement of a database): a follower of a large tree (TreeTail) reads
// its running sessions with one query instead of one, or two, each.
type ManyEventsReader interface {
	// EventsOfMany returns the events of the sessions of after (a
	// session's id → the seq its events are read after), in store-wide
	// order (GlobalSeq), as one snapshot has them: with an event of the
	// read, every event committed before it of those sessions. A session
	// that does not exist has no events.
	EventsOfMany(ctx context.Context, after map[string]int64) ([]Record, error)
}

// ManyReader returns st as a ManyEventsReader, looking through wrappers
// as Notifier does; nil when none is one.
func ManyReader(st Store) ManyEventsReader {
	for st != nil {
		if m, ok := st.(ManyEventsReader); ok {
			return m
		}
		u, ok := st.(interface{ Unwrap() Store })
		if !ok {
			return nil
		}
		st = u.Unwrap()
	}
	return nil
}
