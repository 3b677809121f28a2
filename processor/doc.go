// Package processor records root runs into the store and projects them into
// the session tree (spec/EVENTS.md §6): one recorder, one projection.
//
// # Recorder
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
//
// # Projection
//
// A Projection is the session tree of the runs it watches (Processor.Watch)
// or is fed by hand (Apply, which returns the Changes of one event). It
// keeps per session its record and status, the user message that started
// it, an open assistant message and its parts (text, reasoning, tool parts
// going pending → running → completed | error), and in the parent a
// task-like tool part whose metadata names the child (sessionId,
// parentSessionId). Each event yields Changes (SessionCreated,
// SessionUpdated, MessageUpdated, PartUpdated, PartDelta, SessionIdle,
// SessionError, PlanUpdated), shaped so that an OpenCode server maps each
// one to session.created, session.updated, message.updated,
// message.part.updated, message.part.delta, session.idle, session.error
// and todo.updated; subscribers (Subscribe) get them, and they are made
// only while someone subscribes (or for Apply). A tool part's state
// carries the tool's report for front ends (locations, diffs, metadata of
// tool_call_complete); Plan gives a session's latest plan. LatestPlan and
// ToolReports read both back from a session's event log (runs no longer
// projected, earlier processes).
//
// The projection reads the store (the record of a session it starts
// projecting; Session and Plan of a run it released) and never writes it:
// the recorder runs first, so what the store rules create is there. A root
// the store does not have (a stream fed by hand) is announced with a
// SessionCreated.
//
// Guarantees:
//
//   - Duplicate guard: a spawn_session_start for a child the projection has
//     already seen (in any stream: while its run is projected, and after
//     it ended for the last 65,536 ended children) changes nothing. The
//     child may already exist in the store (spawn.Spawn creates it before
//     the start); that is expected.
//   - Reactive fallback: an event of a child that arrives without its
//     spawn_session_start (streams of older producers) creates the child
//     in the projection as a start would, and logs a warning.
//   - spawn_session_end finalizes the child (status, stop reason, usage,
//     cost, duration, final message), closes its open message and parts,
//     and moves the parent's tool part to completed or error. No part is
//     left pending or running after its session ended: open tool parts of
//     an ended session become error, and a session that ends with open
//     children ends them too (aborted).
//   - Changes are snapshots: they share no mutable memory with the
//     projection or with each other's maps (spec invariant 10).
//   - Safe for concurrent use. Events of one stream must come in stream
//     order (a Recorder holds its run's lock); subscribers see the Changes
//     of one stream in that order. Each root run's projection has its own
//     lock: events of different runs never wait for each other, and only
//     a run's first event, a new child and a run's end touch state shared
//     by the runs (the duplicate guard, the index of live sessions).
//   - Memory: once a session has ended, its messages and parts are
//     dropped; once a root run has ended (its own stream_complete or
//     run_error), the projection of its whole tree is released and only
//     the ended children's ids stay, for the duplicate guard. Later events
//     of a released child change nothing; Session then reads the store. A
//     released child that is continued as a root run of its own is
//     projected afresh.
package processor
