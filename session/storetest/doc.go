// Package storetest is the conformance suite that every session.Store
// passes. A store's own tests call Run with a function that opens a fresh,
// empty store:
//
//	func TestConformance(t *testing.T) {
//		caps := storetest.Capabilities{MaxRoots: memory.DefaultMaxRoots}
//		storetest.Run(t, caps, func(t *testing.T) session.Store { return memory.New() })
//	}
//
// Capabilities declares where a store legitimately differs, and the suite
// holds the store to each flag both ways:
//
//   - MaxRoots: the bound on the roots it keeps. Set, RootRetention checks
//     that the oldest finished trees are dropped whole down to the bound
//     and a running root never is; ManyRoots (more finished roots than
//     that, all listed) is skipped. Zero, ManyRoots runs.
//   - OpenShared: opens a second store on the same data (a file, a
//     database). Set, SharedClaims and SharedReads check that claims and
//     committed writes are seen across the stores; nil, they are skipped.
//   - DeferredCommits: honours session.DeferCommits. Set, DeferredCommits
//     checks deferred writes are answered, read back and committed by
//     Flush; unset, skipped.
//   - Notifies: implements session.EventNotifier. Set, SubscribeEvents
//     checks a notice comes for an append; unset, NoNotices checks that
//     the store does not implement the interface (a follower that type
//     asserts for it must fall back to reading).
//
// Each skip says which flag caused it; a store's own tests never work
// around a case. Every other case runs for every store. The stores
// declare: memory {MaxRoots: memory.DefaultMaxRoots (or its
// WithMaxRoots)}, sqlite {DeferredCommits, OpenShared for a file},
// postgres {OpenShared, Notifies}.
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
