// Package processor turns any event stream into the session tree
// (spec/EVENTS.md §6): the projection that the store and every protocol
// server show. The pool routes each root stream through one Processor;
// protocol servers subscribe to it (Subscribe) and turn its Changes into
// their wire events.
//
// Apply(ctx, owner, e) takes one event of the stream owned by the root
// session owner. It
//
//   - appends the event, unwrapped, to the log of the session that
//     produced it (session.Store.AppendEvents), in the order of the calls;
//   - updates an in-memory projection: per session its record and status,
//     the user message that started it, an open assistant message and its
//     parts (text, reasoning, tool parts going pending → running →
//     completed | error), and in the parent a task-like tool part whose
//     metadata names the child (sessionId, parentSessionId);
//   - returns the Changes this caused (SessionCreated, SessionUpdated,
//     MessageUpdated, PartUpdated, PartDelta, SessionIdle, SessionError,
//     PlanUpdated), shaped so that an OpenCode server maps each one to
//     session.created, session.updated, message.updated,
//     message.part.updated, message.part.delta, session.idle,
//     session.error and todo.updated; subscribers get the same Changes.
//     A tool part's state carries the tool's report for front ends
//     (locations, diffs, metadata of tool_call_complete); Plan gives a
//     session's latest plan. LatestPlan and ToolReports read both back
//     from a session's event log (runs no longer projected, earlier
//     processes).
//
// Guarantees:
//
//   - Duplicate guard: a spawn_session_start for a child the processor has
//     already seen (in any stream: while its run is projected, and after
//     it ended for the last 65,536 ended children) changes nothing in the
//     projection. The child may already exist in the store
//     (spawn.Spawn creates it before the start); that is expected.
//   - Reactive fallback: an event of a child that arrives without its
//     spawn_session_start (streams of older producers) creates the child
//     as a start would, in the projection and, when missing, in the store,
//     and logs a warning.
//   - spawn_session_end finalizes the child (status, stop reason, usage,
//     cost, duration, final message), closes its open message and parts,
//     and moves the parent's tool part to completed or error. No part is
//     left pending or running after its session ended: open tool parts of
//     an ended session become error, and a session that ends with open
//     children ends them too (aborted).
//   - The store is only completed, never contradicted: a child's final
//     status is written only while the store still shows it running.
//   - Changes are snapshots: they share no mutable memory with the
//     projection or with each other's maps (spec invariant 10).
//   - Apply is safe for concurrent use. Events of one stream must be
//     applied in stream order (the pool's recorder holds a lock per run);
//     subscribers see the Changes of one stream in that order.
//   - Memory: once a session has ended, its messages and parts are
//     dropped from the projection; once a root run has ended (its own
//     stream_complete or run_error), the projection of its whole tree is
//     released and only the ended children's ids stay, for the duplicate
//     guard. Later events of a released child are stored but change
//     nothing; Session then reads the store. A released child that is
//     continued as a root run of its own is projected afresh.
//
// # Lean runs
//
// Record (the pool's path) projects only the root runs someone watches. A
// root run is projected when, at the first event of its owner that the
// processor sees, there is a subscriber, or that event came through Apply;
// it stays projected to its end, subscribers or not, and its Changes are
// built only while someone subscribes. Any other run is lean: Record does
// only its store work, the same as for a projected run (the duplicate
// guard aside):
//
//   - every event is appended, unwrapped, to the log of the session that
//     produced it, in the order of the calls (an event that wraps nothing
//     or has no session is logged and dropped);
//   - the root is created in the store when missing (one read per run);
//   - reactive fallback: a child event whose session is not in the store
//     creates it, and the missing sessions of its path, from what the
//     wrapper carries, then is appended; a spawn_session_start whose child
//     is not in the store creates it from the start;
//   - spawn_session_end completes the child's record while the store still
//     shows it running; children that the run started or created and that
//     are still open when their parent (or the root) ends are ended as
//     aborted, on the same terms.
//
// On the spawn.Spawn path (children created before their start, finalized
// before their end) this costs one store read per run, per start and per
// end besides the appends, and the processor allocates nothing per event.
// A lean run keeps only a small state, released when its root run ends; it
// adds nothing to the duplicate guard and has no live projection (Session
// reads the store). Subscribers see the runs whose first event came after
// they subscribed, not runs that started lean. An Apply on a lean run
// projects it from that event on (its earlier sessions come in through the
// reactive fallback).
//
// A Stream (Processor.Stream) records one root run as Record does, event
// by event; the pool opens one per run. Once its run is lean it keeps the
// run's state and records each event without the processor's lock, which
// Record takes for every event.
package processor
