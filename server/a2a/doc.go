// Package a2a serves a pool's agents over the Agent2Agent protocol (A2A
// 0.3, JSON-RPC over HTTP with server-sent events), so that agents of
// other programs and organisations can hand work to them. The protocol's
// types, its JSON-RPC binding and its task bookkeeping are those of the
// official Go SDK, github.com/a2aproject/a2a-go (a2asrv); this package is
// the AgentExecutor that runs the pool, the agent cards, and the HTTP
// surface around them.
//
// Routes: every node of the pool (agent, team, external member) is an A2A
// agent at /agents/{name} (JSON-RPC: POST), its card at
// /agents/{name}/.well-known/agent-card.json; the default node is also at
// / with its card at /.well-known/agent-card.json. GET /agents lists the
// cards, GET /healthz answers ok.
//
// Guarantees:
//
//   - message/send and message/stream start one root run of the agent
//     (pool.RunSink) per task. A message whose contextId names a context
//     this server ran before continues that context's session (its
//     history); otherwise a new session is made. Only the message's text
//     parts are read (data parts as JSON text); a message with neither is
//     rejected (task failed, with the reason).
//   - A task's events: the task (submitted), a working status that names
//     the agentpool session in its metadata (agentpool.session_id), the
//     root's text as it streams (artifact "response", appended in chunks
//     of at most 16 KiB), a working status for each delegation inside the
//     run as it starts and as it ends (metadata agentpool.event,
//     child_session_id, parent_session_id, source_name, depth, stop_reason)
//     and, for each ended delegation, an artifact named after the member
//     with its last message; then one final status: completed (with the
//     answer as its message, when at most 16 KiB), failed (the error) or
//     canceled. No event carries more than 16 KiB of text, so that clients
//     that read a server-sent event as one line of at most 64 KiB (the Go
//     SDK's) read every event.
//   - tasks/cancel cancels the task's session (pool.Cancel): the run ends
//     aborted with its subtree, the task canceled. A task outlives the
//     stream that started it (the SDK's executions are detached): a
//     client that goes away leaves the run going, and tasks/get reports
//     it; tasks/resubscribe (the SDK's) streams its events from then on
//     to its final status. Closing the server cancels every run.
//   - Bounds: a request body is at most MaxBodyBytes (413 beyond), the
//     server keeps at most MaxTasks tasks (the oldest ended ones are
//     forgotten first) and MaxContexts context → session pairs, runs at
//     most MaxRuns tasks at once (more are refused), and the run's events
//     wait for a slow client in a bounded queue (text merged when full,
//     the run held back past it). The pool's recorder hands events over
//     under its lock; this package only queues them there.
//   - Security: as the other HTTP servers (package httpsec): loopback
//     only unless a bearer token is set, which every request but the
//     agent cards must then carry; the cards then declare the bearer
//     scheme.
package a2a
