// Package record records root runs into the session store and hands their
// events on, in order, to the run's watchers and its caller: one Recorder
// per run. The name says what it does: it keeps the record of every run
// (the sessions' event logs and the store rules below). The live session
// tree that front ends read is package sessiontree, one of its watchers.
//
// A Processor opens one Recorder per root run (Open); the pool makes it the
// run's root sink. For each event of the run, under the run's lock, the
// Recorder
//
//   - appends the event, unwrapped, to the log of the session that produced
//     it (session.Store.AppendEvents), in stream order (an event that wraps
//     nothing or has no session is logged and neither stored nor watched);
//   - hands it to the run's watchers (Watch): those registered when the
//     run's first event came, to the run's end;
//   - passes it on to the next sink (the caller's).
//
// So the store, the watchers and the caller see the same order. Relay
// hands on, in that order too, an event its producer stored already (a
// run on a durable engine, whose workers write the logs): the watchers
// and the next sink get it, the store is not written and no store rule
// applies. Record
// appends an event of the run without passing it on, in the same order:
// for events outside the run's span (spawn.Invocation.Record; the
// session/start and session/end hooks).
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
// with no allocation per event. A run nobody watches costs nothing more.
package record
