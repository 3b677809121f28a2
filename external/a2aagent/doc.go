// Package a2aagent makes a remote agent that speaks the Agent2Agent
// protocol (A2A 0.3, JSON-RPC over HTTP) a node of the pool: a team
// member, a worker, a target of the task tool, or the root (manifest:
// an agent of `type: a2a`). agentpool is the A2A client here; package
// server/a2a is the other side. The protocol's types are those of the
// official Go SDK (github.com/a2aproject/a2a-go/a2a); the JSON-RPC and
// server-sent-events client is this package's own (client.go says why).
//
// Package batteries wires the kind into the pool (pool.Registry.SetExternal),
// so that the core depends neither on this package nor on the SDK.
//
// Guarantees:
//
//   - The agent's card is fetched by the first delegation (and again
//     after a failure), with Headers; its url is where the requests go.
//     A card that offers no JSON-RPC interface is an error.
//   - Each delegation is an observable child session: run_started, then
//     the remote task's events as they come: the text of its answer
//     artifacts as one streamed text part, its working status messages
//     and the artifacts of the remote's own delegations (those whose
//     metadata names an agentpool child session) as a2a_status and
//     a2a_artifact custom events, then stream_complete with the answer
//     (the last answer artifact's text, else the final status message),
//     or run_error. The remote task's and context's ids are stored on the
//     child session (Metadata a2a_task_id, a2a_context_id); a continued
//     child sends its context id, so that the remote agent continues the
//     conversation. The prompt and the answer are the child's
//     conversation.
//   - A streaming agent (card capabilities.streaming) gets message/stream,
//     any other message/send (blocking).
//   - Cancelling the delegation (its run, a spawn timeout, Pool.Cancel)
//     closes the stream and sends tasks/cancel for the task, bounded by
//     CancelGrace; the child ends aborted. A remote task that ends failed,
//     rejected or canceled, or that asks for input (input-required,
//     auth-required: a member cannot be asked), or a stream that ends
//     before the task does, fails the delegation only (stop reason error,
//     the remote's message); the parent goes on.
//   - Bounds: a card, an answer and one server-sent event are at most 8
//     MiB; the answer kept is at most MaxOutputBytes.
package a2aagent
