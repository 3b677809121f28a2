// Package sqlite is the persistent session.Store, on SQLite through the
// pure-Go driver modernc.org/sqlite (no cgo). It passes the
// session/storetest conformance suite.
//
// # What it stores
//
// Sessions (every field of session.Session, with the parent link as a
// foreign key), conversation messages with one row per part, and the event
// log of every session: each event as its wire JSON (event.Marshal), with
// a per-session sequence number (Record.Seq, 1, 2, ...) and a store-wide
// one (Record.GlobalSeq, the row id) that orders events across sessions.
// Deleting a session deletes its subtree, messages and events (ON DELETE
// CASCADE).
//
// # Guarantees
//
//   - Schema: an embedded, ordered list of migrations (migrations/NNNN_*.sql)
//     tracked with PRAGMA user_version; Open brings any older database up
//     to date, each step in its own transaction, and refuses a database
//     newer than the code.
//   - Connections use WAL mode, synchronous=NORMAL, foreign_keys=on and a
//     busy timeout, so several processes can read while one writes.
//   - One writer goroutine owns every write. AppendEvents and
//     AppendMessages encode on the caller's goroutine (an event that cannot
//     be encoded is an error at once), queue and return; the writer commits
//     the queue in transactions of up to Options.BatchSize writes, waiting
//     at most Options.Linger for a batch to fill. Nothing accepted is ever
//     dropped: when the queue is full (Options.MaxPending) appenders wait.
//     A commit that fails is retried; an error that persists is logged and
//     returned by the next Flush.
//   - CreateSession, UpdateSession and DeleteSession go through the same
//     queue, in order with the appends before them, and return once
//     committed: a created child is in the database before its
//     spawn_session_start can be emitted.
//   - Read-your-writes: Events and Messages first wait for queued writes
//     to commit, so they see everything appended before the call.
//   - Flush returns once every write accepted before it is committed;
//     Close flushes, then releases the database.
//   - A commit survives the process being killed (SIGKILL) at any moment:
//     the database stays intact and every event committed before the kill
//     is readable.
//   - Crash recovery: each open store registers itself (pid, host) and
//     marks the sessions it writes. Open turns the running sessions of a
//     process that is gone into interrupted (see Store.Recovered); those of
//     a live process on the same host are left alone.
//
// ":memory:" opens a private in-memory database (one connection).
package sqlite
