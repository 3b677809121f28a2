// Package storetest is the conformance suite that every session.Store
// passes. A store's own tests call Run with a function that opens a fresh,
// empty store:
//
//	func TestConformance(t *testing.T) {
//		caps := storetest.Capabilities{MaxRoots: memory.DefaultMaxRoots}
//		storetest.Run(t, caps, func(t *testing.T) session.Store { return memory.New() })
//	}
//
// Capabilities declares where a store legitimately differs: a bound on the
// finished roots it keeps (MaxRoots), data shared with another store on it
// (OpenShared: claims and committed writes seen across stores), commits
// deferred by session.DeferCommits, and session.EventNotifier. The cases a
// capability enables run; the others are skipped with the reason, never
// worked around in a store's own tests. Every other case runs for every
// store.
//
// The suite checks the Store contract as session.Store documents it:
// creation and the parent link (ErrExists, ErrNotFound for a missing
// parent or a session named as its own), ErrNotFound from every call on
// an unknown session, atomic updates that cannot move a session in the
// tree, copy isolation of
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
