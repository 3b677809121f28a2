// Package sqlite is the persistent session.Store, on SQLite through the
// pure-Go driver modernc.org/sqlite (no cgo). It passes the
// session/storetest conformance suite.
//
// # What it stores
//
// Sessions (every field of session.Session, with the parent link as a
// foreign key; a session named as its own parent is refused with
// session.ErrNotFound, as the key alone would accept it), conversation messages with one row per part, and the event
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
//   - Lookups by AG-UI thread (ListOptions.Thread) search the expression
//     index sessions_thread (migration 0005, which indexes the sessions
//     already stored): their cost is that of the sessions found.
//   - Connections use WAL mode, synchronous=NORMAL, foreign_keys=on and a
//     busy timeout, so several processes can read while one writes. The
//     WAL is checkpointed by a goroutine of the store after commits
//     (passive, every 250 ms at most), not inside the commit that fills
//     it: no write waits for a checkpoint's copy and fsyncs.
//   - Durability: a commit is in the WAL file before the write returns,
//     which survives the process being killed (SIGKILL). With
//     synchronous=NORMAL the WAL is fsynced at checkpoints, not at each
//     commit: after a power loss or an OS crash the last commits before
//     it may be missing; the database stays consistent.
//   - Every write goes through one queue and is applied in queue order in
//     the writer's transaction (Begin IMMEDIATE: it holds the database's
//     write lock), which may stay open across several callers' writes and
//     is committed when a write needs it (below), and at the latest
//     Options.Linger after it began. AppendEvents and AppendMessages
//     encode on the caller's goroutine (an event that cannot be encoded is
//     an error at once), queue and return. Nothing accepted is ever
//     dropped: when the queue is full (Options.MaxPending) appenders wait.
//     A commit that fails is retried (the transaction replayed whole); an
//     error that persists is logged and returned by the next Flush, and
//     every write it lost that was made with a context of
//     session.TrackWrites (a run's: answered appends and deferred writes
//     included) is counted in that run's account, with the store's path
//     and SQLite's error, before any caller of the transaction is
//     answered; the run's later writes are refused (an append is dropped
//     and counted, a synchronous write answers session.ErrEarlierWriteLost),
//     so what is stored of a run is a prefix of what it wrote. A Release
//     whose commit fails still ends the claim: the store's next claim and
//     commits delete its row.
//   - DeleteSession, Release, Flush, and CreateSession and UpdateSession
//     return once committed. Batching adapts to the load: a caller that
//     finds no one applying applies the queue at once, on its own
//     goroutine (no linger, no hand-off); the writes of callers that come
//     meanwhile are applied together next.
//
// # Deferred commits, and why they keep the guarantees
//
// Some writes are answered once applied, before their commit:
// CreateSession and UpdateSession of a run whose account defers commits
// (session.TrackWrites with WriteOptions.DeferCommits: pool.Pool.RunSink
// opens one after its claim), Claim, and GetSession's reads. A delegated call is then one
// commit (at its Release) instead of one per claim, create, update and
// release. The guarantees hold because:
//
//   - Order: the transactions of one store commit one at a time in queue
//     order, and an op is applied in the transaction that commits it or in
//     an earlier one, never a later one. Whatever refers to a write (the
//     spawn_session_start naming a child, the child's events, a parent's
//     end) is queued after it, so it is committed in the same transaction
//     or a later one: after a SIGKILL at any moment, nothing stored refers
//     to a session that is not stored. The SIGKILL tests check this.
//
//   - Acknowledgement: what a caller hands out of the process is durable
//     first. A run hands out its result after its Release returns, which
//     commits everything queued before it (a session write made without
//     the mark, by a server answering an HTTP request for example, is
//     committed before it returns, as before). Events reach a live sink
//     before their commit, as they always did; Flush makes them durable.
//
//   - Claims: a claim is checked and taken inside the writer's
//     transaction, which holds the database's write lock from that moment
//     to its commit, so no other process can check or take a claim in
//     between; the claim's row is written by that commit (none when the
//     Release comes in the same transaction). If the process dies first,
//     its claim goes with it, as a dead process's claims do anyway. Only
//     a commit that fails and is replayed gives other processes a moment
//     to claim: the replayed claim then fails and the error is logged.
//
//   - Reads: GetSession answers from the transaction while it is open
//     (read-your-writes), from the records this store wrote or read in it
//     (cache.go: valid because no other connection can commit while the
//     transaction holds the write lock, and emptied when PRAGMA
//     data_version shows another connection's commit); Events, Messages,
//     ListSessions and Flush first commit what is open.
//
//   - Other processes see a deferred write once it is committed, at most
//     Linger (default 2 ms) after it was applied, as they see appends; a
//     process that writes waits for the lock meanwhile (busy timeout).
//
//   - Read-your-writes: Events and Messages first wait for queued writes
//     to commit, so they see everything appended before the call.
//
//   - Flush returns once every write accepted before it is committed;
//     Close flushes, then releases the database.
//
//   - A commit survives the process being killed (SIGKILL) at any moment:
//     the database stays intact and every event committed before the kill
//     is readable.
//
// # Owners, claims and crash recovery
//
// Each open store is an instance: a row of the instances table (id, pid
// and host, for messages; boot id; heartbeat) and an exclusive flock on
// a lock file of its own, DB.instances/<id>.lock, taken before the row is
// written and held until Close. A Close that cannot delete its row (a
// full disk) leaves the file, free: the next store sees the instance dead
// at once (rule 1 below) and recovers its sessions. A session records the instance that last
// created or updated it (its owner).
//
// Whether an instance is alive is decided without trusting process ids,
// which a container's pid 1 or a reused pid would fool:
//
//  1. its lock file is held: alive; it can be locked and the store ran on
//     this machine (same boot id or host name): dead, since the kernel
//     releases the lock of a process that dies, however it dies;
//  2. otherwise (no lock file to look at: flock missing on the platform,
//     the file removed; or a free lock of another machine, which a
//     network file system may not show): dead if it is on this host and
//     ran before the machine last booted (boot ids differ), else alive
//     while its heartbeat, renewed every Options.Lease/3, is younger than
//     Options.Lease.
//
// Claims (session.Store.Claim) are rows of the claims table naming the
// instance that holds them, so every process on the database sees them.
// Claim checks the claims on the session, its ancestors and its
// descendants and adds its own in one transaction of the writer (which
// holds the database's write lock); a claim whose instance is dead (or
// gone) does not count. Release goes through the
// writer's queue: the claim is deleted in the transaction of the writes
// queued before it or after them, so that the next owner reads them.
// Close drops the store's claims and its row.
//
// Recovery: Open, and a Claim that finds a dead instance in its way, take
// over the running sessions of dead or unknown instances in the same
// transaction (they become this store's, still running), drop the dead
// instances' rows, claims and lock files, then close what their runs
// left open with session.CloseInterrupted (docs/spec/EVENTS.md §8: ends
// with stop reason interrupted, error results for unfinished tool calls,
// a final run_error) and mark them interrupted, but for a tree in which a
// tool call waits for a person's answer (session.FindWaiting): that tree
// stays running, its logs untouched, for the process that goes on with it
// (pool.Pool.Continue). Should this process die
// in the middle, they are running sessions of a dead instance again, and
// the next store finishes the job (it only adds what is missing).
// Store.Recovered lists what Open recovered.
//
// ":memory:" opens a private in-memory database (one connection), with
// no lock file and no heartbeat: no other process can see it.
package sqlite
