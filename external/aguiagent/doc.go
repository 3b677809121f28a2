// Package aguiagent makes a remote agent that speaks AG-UI (HTTP POST of
// a RunAgentInput, answered by a stream of server-sent events) a node of
// the pool: a team member, a worker, a target of the task tool, or the
// root (manifest: an agent of `type: agui`, AgentPool's AG-UI agents).
// agentpool is the AG-UI client here; package server/agui is the other
// side. The wire types are this package's own: the few fields of
// RunAgentInput and of the events it reads.
//
// Package batteries wires the kind into the pool (pool.Registry.SetExternal),
// so that the core does not depend on this package.
//
// Guarantees:
//
//   - Each delegation is one POST to Endpoint with Headers and an
//     observable child session: run_started, the remote run's text as one
//     streamed text part, its tool calls as tool_call_start and
//     tool_call_complete (with the remote's result; a call left without
//     one is completed as an error when the run ends), then
//     stream_complete with the answer (the run's text, else RUN_FINISHED's
//     result), or run_error. Events of the remote's own subagents (those
//     carrying subagentRunId) are not the answer and are left out.
//   - threadId is derived from the child session ("agentpool-" and its
//     id), so a continued child continues the remote thread.
//   - Cancelling the delegation (its run, a spawn timeout, Pool.Cancel)
//     closes the request, which an AG-UI server takes as the end of the
//     run; the child ends aborted. Timeout, when set, bounds the whole
//     delegation (AgentPool's `timeout`). A RUN_ERROR, an HTTP status
//     other than 200 or a stream that ends without RUN_FINISHED fails the
//     delegation only (stop reason error); the parent goes on.
//   - With StartupCommand (AgentPool's startup_command) the node starts
//     its server itself, at the first delegation and again after it
//     exited, as a process tree (internal/proctree), waits until the
//     endpoint accepts connections, and ends the tree on Close (which
//     pool.Pool.Close calls).
//   - Bounds: one server-sent event is at most 8 MiB, an error body 64
//     KiB; the answer kept is at most MaxOutputBytes, a tool result 1 MiB.
package aguiagent
