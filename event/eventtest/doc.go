// Package eventtest holds test helpers for event streams: CheckInvariants
// checks a root stream against the invariants of docs/spec/EVENTS.md §3 that can
// be checked on a stream alone, and Collect returns a concurrency-safe sink
// that keeps every event it receives.
//
// CheckInvariants expects a complete stream: every event the root run
// emitted, from its run_started to the end of the run. It checks
//
//  1. spawn first: exactly one spawn_session_start per child, in its
//     parent's stream, before any event of the child (a child continued
//     after its end, spawn.Resume, starts again: a start whose metadata
//     has "resumed", after its end, begins its next run);
//  2. end last: exactly one spawn_session_end per child run, after the last
//     event of the child and of every child it spawned; nothing of the
//     child after it; every started child ends;
//  4. depth: depth(child) = depth(parent)+1 (root 0), and the depth of a
//     wrapper, start or end is the depth of the session it describes;
//  5. one wrapper: no subagent wraps a subagent; a wrapper's
//     child_session_id is the producing session, parent_session_id its
//     parent, path the session ids from the root's child down to it;
//  6. order within a session: run_started first, stream_complete or
//     run_error last (custom events, which hooks may emit around a run, are
//     exempt);
//  9. unique ids: no session id is started twice (nor is the root
//     started as a child), no run id is used twice.
//
// Invariants 3, 7, 8 and 10 need the store, the runtime or timing and are
// tested where those are available.
package eventtest
