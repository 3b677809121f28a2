// Package postgres is a session.Store on PostgreSQL, through pgx
// (github.com/jackc/pgx/v5, pgxpool), for pools whose processes run on
// several machines and share one store. It passes the session/storetest
// conformance suite and implements session.EventNotifier.
//
// # What it stores
//
// In one schema (Options.Schema, else the connection's current schema;
// created when missing): sessions (every field of session.Session, the
// parent link a foreign key; a session named as its own parent is refused
// with session.ErrNotFound), messages (parts as a JSON array), events
// (each event's wire JSON, event.Marshal, with its per-session seq and its
// store-wide gseq), event_counter (the last gseq handed out), instances
// (the open stores) and claims. Times are Unix nanoseconds. Deleting a
// session deletes its subtree, messages and events (ON DELETE CASCADE).
//
// # Guarantees
//
//   - Schema: embedded, versioned migrations (migrations/NNNN_*.sql),
//     recorded in schema_migrations; Open applies the missing ones in one
//     transaction under a transaction-level advisory lock named after the
//     schema, so several processes opening at once are safe, and refuses
//     a schema newer than the code.
//   - Every write is committed before its call returns: reads from any
//     process see it, Flush has nothing to wait for. A write that fails,
//     made with a context of session.TrackWrites, is counted in that
//     run's account (with the store's URL, password hidden, and the
//     server's error: SQLSTATE 53100 for a full disk), and the run's later
//     writes are refused (session.ErrEarlierWriteLost): what is stored of a
//     run is a prefix of what it wrote. A Release that fails still ends
//     the claim: the store's next Claim deletes its row (and Close does).
//   - Order: a session's events are numbered 1, 2, ... without gaps; gseq
//     (Record.GlobalSeq) is store-wide and is also the commit order.
//     Appends, from every process, take the event_counter row's lock
//     until they commit (the append_events function, one round trip), so
//     a follower that reads "gseq > the last it saw" (EventsAfter) never
//     misses an event committed later with a smaller gseq. Concurrent
//     appends of one store are committed together (group commit).
//   - Claims across machines: each open store holds a session-level
//     advisory lock (lockClass, a key unique among live stores) on a
//     connection of its own for as long as it is open; the server drops
//     the lock when that connection ends, however it ends. A claim is a
//     row (session, store); it counts only while its store's lock is held
//     (pg_locks). Claim checks the session's ancestors and descendants and
//     adds its row in one transaction that locks the claims table against
//     other claimants; a dead store's claims and row are dropped there.
//     Release deletes the row; Close deletes the store's claims. A store
//     that loses its owner connection logs an error and makes it again
//     (Options.OwnerCheck), taking its lock back: its claims that nobody
//     took meanwhile count again.
//   - Notices (SubscribeEvents): appends NOTIFY on a channel of the schema
//     in their transaction, payload "GSEQ SESSION_ID". A store has one
//     listening connection, started by the first subscription, shared by
//     its subscribers (each with a coalescing queue, so a slow one holds
//     nobody up). A lost listening connection is made again; once it
//     listens, every session with events above the last gseq noticed gets
//     a notice, so nothing committed meanwhile goes unnoticed.
//   - No error or log line names the password of the URL (SafeURL).
//
// # Limits
//
// Appends commit one at a time across the whole database (the price of
// gseq being the commit order): throughput is bounded by commit latency
// (the disk's fsync unless synchronous_commit is off), eased by the group
// commit of each store. Unlike the SQLite store, nothing closes the
// sessions a dead process left running (session.CloseInterrupted): on a
// shared database another machine may carry that run on; a dead store's
// claims simply stop counting.
package postgres
