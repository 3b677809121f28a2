// Package bench holds agentpool's end-to-end benchmarks and the workloads
// they run. The workloads are exported so that the side-by-side comparison
// with a peer framework (the separate module bench/compare) runs exactly
// the same agentpool work as the benchmarks here.
//
// Workloads (all offline, on the scripted test model):
//
//   - Delegated: a parent agent calls the worker tool ask_worker once; the
//     worker runs in its own child session (spawn_session_start, wrapped
//     events, spawn_session_end, messages and events stored) and answers
//     "done"; the parent then finishes. Every event reaches a Counter.
//   - Pipeline: a child spawned with spawn.Spawn emits N part_delta events;
//     they are wrapped once and delivered to the root stream (bare runtime,
//     or the full pool path with the recorder and the store).
//   - Team: a root parallel team of N scripted members (fan-out scaling).
//   - Chain: agent a0 asks a1, which asks a2, ... down to depth d.
//   - Latency: K concurrent children each emit M events; the time from the
//     child's Emit to the root consumer's receipt is recorded per event.
//
// The servers' scale benchmarks (server/opencode, server/agui) run their
// client in a process of its own with StartLoad and ServeLoad
// (loadproc.go), so that their figures are the server's alone.
//
// Run them with `make bench`, which also writes BENCHMARKS.md, or directly:
//
//	go test -run '^$' -bench . -benchmem ./bench
package bench
