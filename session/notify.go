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
