// Package storetest is the conformance suite that every session.Store
// passes. A store's own tests call Run with a function that opens a fresh,
// empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) session.Store { return memory.New() })
//	}
//
// The suite checks the Store contract as session.Store documents it:
// creation and the parent link (ErrExists, ErrNotFound for a missing
// parent), ErrNotFound from every call on an unknown session, atomic
// updates that cannot move a session in the tree, copy isolation of
// metadata and messages, listing order and filters, deletion of a whole
// subtree with its messages and events, per-session event order with
// contiguous sequence numbers and one store-wide order, read-your-writes
// without Flush, many concurrent writers and readers, claims (one holder
// per line of sessions, released and claimed again, a new session's id
// claimed before it exists, exactly one winner among concurrent claims,
// a *RunningError that names this process), ErrClosed after Close, and
// the account of a run's writes (session.TrackWrites: refusals for a
// session's state are no loss, a write the store cannot take is one; after
// a loss the run's later writes are refused, its Release still ends its
// claim). Each subtest opens its own store and closes it when done.
//
// Faulty wraps a store to fail its writes like a full disk, for the tests
// of what runs do when their store fails.
package storetest
