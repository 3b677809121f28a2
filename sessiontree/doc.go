// Package sessiontree is the live session tree of spec/EVENTS.md §6: a
// projection of the runs that a record.Processor records, which the
// OpenCode server and the web view read. The name says what it holds: the
// tree of sessions (and their messages and parts) as the events build it;
// it writes nothing.
//
// A Projection is the session tree of the runs it watches
// (record.Processor.Watch) or is fed by hand (Apply, which returns the Changes of one event). It
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
// the recorder (package record) runs first, so what the store rules
// create is there. A root the store does not have (a stream fed by hand)
// is announced with a SessionCreated.
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
package sessiontree
