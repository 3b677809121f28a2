// Package replay re-runs a recorded session with the model answers it
// recorded, and says where the new run departs from the old one.
//
// Load reads a session and its subtree from a store and builds its
// cassette: for every recorded session, the assistant messages of its
// model calls in order (text, thinking, tool calls with their ids, in
// the pieces its part events recorded), the finish reason, the usage of
// each run put on the run's last call, and its compaction summaries.
// A Player serves the cassette as a model.Model (every agent of the
// replaying pool gets it, whatever its manifest names) and is the
// replay's event sink: it maps each session the replay spawns to the
// recorded session spawned at the same place (the same tool call of the
// same turn of the mapped parent, or the same member name), so that a
// session's model calls get that session's answers, and it notes what
// the replay does there.
//
// What is compared is what tools, hooks and delegation produce, never
// what the model says (the cassette says it): per session and model
// turn, each tool call (name and input), its result, each child spawned
// and how it ended, and each run's final answer and stop reason (or error
// code). Steps are keyed by session, turn and the call's position in the
// turn, never by ids or times of the replay, so that tools running in
// parallel and fresh ids cannot make two identical runs differ. A model
// call the cassette has no answer for (a session the recording does not
// have, or more calls than it recorded) fails that call and is a
// divergence.
//
// The package reads the recording and never writes it: the replay runs in
// a pool of the caller's making (agentpool replay: an in-memory store and
// a copy of the workspace). The store keeps no per-call token counts, so
// a replay's compactions may fall on other turns (a compaction without a
// recorded summary is a divergence). Hook, approval and compaction custom
// events are not compared (their effects on tool results, blocked
// prompts and extra turns are). The Player is safe for the concurrent
// model calls of parallel sessions.
package replay
