// Package record records root runs into the session store and hands their
// events on, in order, to the run's watchers and its caller: one Recorder
// per run. The name says what it does: it keeps the record of every run
// (the sessions' event logs and the store rules below). The live session
// tree that front ends read is package sessiontree, one of its watchers.
//
// A Processor opens one Recorder per root run (Open); the pool makes it the
// run's root sink. The flow is one-way: a producer's Emit does, under the
// run's own lock (no lock is shared by runs),
//
//   - the store: it appends the event, unwrapped, to the log of the
//     session that produced it (session.Store.AppendEvents), in stream
//     order, and keeps the store rules below (an event that wraps nothing
//     or has no session is logged and neither stored nor watched);
//   - the run's log: it appends the event for the run's consumers;
//
// and lets the lock go. The consumers are the run's watchers (Watch:
// those registered when the run's first event came, to the run's end;
// a Projection of package sessiontree) and the next sink (the caller's:
// a server's run queue, the CLI's printer, a test). Each reads the log
// from its own cursor, one event at a time, in the log's order, and never
// under the run's lock; the producer then delivers to each consumer that
// no other goroutine is delivering to (log.go), so a producer alone in its
// run has handed its event to every consumer when Emit returns.
//
// What stays synchronous, and why:
//
//   - The store append: the session logs are the record (a later
//     process, a transcript, Continue read them), a run's writes are
//     accounted to it (session.TrackWrites: a lost one fails the run),
//     and the store rules (creating a missing child before its events,
//     completing an ended child) need the events one at a time in the
//     stream's order. Done under the run's lock, it makes the store's
//     order the log's.
//   - The log append, and back-pressure: the log holds at most 1,024
//     events the slowest consumer has not had; a producer that finds it
//     full delivers what it can and waits (before its store append). No
//     event is dropped or merged here (a server's own queue may merge
//     deltas: server/opencode).
//
// Ordering: every consumer gets every event of the run once, in the
// store's order. Between consumers there is no order: a watcher may be
// ahead of the caller's sink, or behind. A slow consumer holds up the
// goroutine delivering to it (and, once the log is full, the run's
// producers), not the other consumers nor the producers that find its
// delivery under way.
//
// Barrier: Emit may return before a consumer had its event, when another
// goroutine is delivering to that consumer. Sync returns once every
// consumer has had every event emitted before it. A consumer that must
// see events before a producer goes on gets this barrier where it
// matters: spawn.Spawn syncs after a child's spawn_session_start, before
// the child runs (a sink that cancels the run on an event has done so
// before any child started after it runs); the approval broker syncs
// before it shows a request (front ends have the events before it); the
// pool syncs before a run's result is returned (and before
// ContinueRelayed's relayed). Consumers must not emit into the run nor
// call Sync (they would wait for themselves).
//
// Relay hands on, in the log's order too, an event its producer stored
// already (a run on a durable engine, whose workers write the logs): the
// watchers and the next sink get it, the store is not written and no
// store rule applies. Record appends an event of the run to the store
// without passing it on, in the same order: for events outside the run's
// span (spawn.Invocation.Record; the session/start and session/end
// hooks).
//
// The store rules, for producers that do not write the store themselves
// (spawn.Spawn creates each child before its start and writes its final
// record before its end; the pool creates the root):
//
//   - the root is created in the store when missing (one read per run);
//   - reactive fallback: a child event whose session is not in the store
//     creates it, and the missing sessions of its path, from what the
//     wrapper carries, then is appended; a spawn_session_start whose child
//     is not in the store creates it from the start (one read per start);
//   - spawn_session_end completes the child's record (status, stop reason,
//     totals, duration, error) while the store still shows it running (one
//     read per end); children that the run started or created and that are
//     still open when their parent (or the root) ends are ended as aborted,
//     on the same terms. The store is only completed, never contradicted.
//
// On the spawn.Spawn path that costs those reads and one append per event,
// with no allocation per event. A run nobody watches and whose caller
// passed no sink has no log.
package record
