// Package session defines session records, stored messages and event log
// records, and the Store interface that every storage backend implements.
//
// A session is one agent or team run history (docs/spec/EVENTS.md §1). The
// parent-child relation is written once, at creation, and never changes.
// Stores are safe for concurrent use; every Store passes the conformance
// suite in session/storetest. Events are appended to the log of the session
// that produced them, each with a per-session sequence number (1, 2, ...)
// and a store-wide sequence that orders events across sessions, so that a
// subtree can be merged back into the one stream its consumer saw live.
//
// One run at a time in a session: a run claims its session in the store
// (Store.Claim, refused with a *RunningError while a live run holds the
// session or a session of its line) and releases it when it has ended.
// A run whose process died ends nothing; CloseInterrupted writes what it
// would have written (docs/spec/EVENTS.md §8), and History gives every
// tool call of a stored conversation a result, so that a resumed session
// is a conversation providers accept.
//
// Lost writes: a run's writes may be answered before they are durable (a
// store that queues appends, WriteOptions.DeferCommits), so a run opens
// an account with TrackWrites, and every store reports to that account
// each write of the run it did not keep, answered or not, and refuses the
// run's writes after the first loss (ErrEarlierWriteLost; Release excepted): what is
// stored of a run is a prefix of what it wrote. A Release that cannot be
// made durable still ends the claim. CloseFailed closes a session whose
// run lost writes as failed (docs/spec/EVENTS.md §9).
//
// A run that stopped while a tool call waited for a person's answer (an
// approval_requested with no answer and no result in its session's log)
// is not closed: FindWaiting reads its tree, a store's recovery leaves
// that tree running, and a later process goes on with it
// (pool.Pool.Continue), having closed what does not wait
// (Waiting.CloseRest).
package session
