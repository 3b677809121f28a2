// Package durable runs a pool's sessions on Temporal (go.temporal.io/sdk):
// the execution engine of a manifest's `execution: {engine: temporal}`.
//
// A session is a workflow whose id is the session id (so a spawn is
// idempotent). The workflow runs the node's own code (the agent loop, a
// team) with a spawn.Env whose steps are Temporal's:
//
//   - a model turn is an activity (Activities.Turn) that streams the model,
//     heartbeating, and writes the turn's events and its assistant message
//     to the shared store when the turn is complete;
//   - a call of a tool that is not spawn.Inline is an activity
//     (Activities.Tool), heartbeating;
//   - a delegation (task, ask_<worker>, team members, delegate_to, ...)
//     runs inline in the workflow, whose Spawn starts the child session as
//     a child workflow (parent close policy: request cancel, so cancelling
//     the root cancels the tree);
//   - concurrency is workflow.Go, the clock workflow.Now, ids come from a
//     generator seeded with the session id.
//
// # Events and idempotence
//
// Live events never go through Temporal's history. What the workflow code
// itself emits (run_started, tool_call_start/complete,
// spawn_session_start/end, stream_complete, run_error) and the messages it
// stores are journaled in the workflow and written to the store by the
// next activity, with the count of events the session's log had before
// them (Pending.AfterSeq). An activity that runs again (a retry, attempt >
// 1, or a write whose outcome the workflow could not learn) first looks at
// the log: what is there is not written twice; messages are matched by
// their ids, which the workflow made. A model turn's message is stored
// before its events; a retried turn whose message is stored returns it
// without calling the model again (and writes its events, rebuilt from the
// message, when the first attempt died between the two writes).
//
// # Tracing
//
// TracingInterceptor is the SDK's OpenTelemetry interceptor, installed on
// the submitting client and the workers' client when tracing is on: the
// trace travels in the Temporal headers, and a run is one trace. Workflow
// code makes no span (it replays); the session's span is the workflow's
// (see nameSessionSpan), the chat and execute_tool spans are made in the
// activities.
//
// # Submitting
//
// RunRoot submits a root and follows its tree from the store: a new
// session, or one the caller stored (RootRequest.Stored: a pool that
// created it, or reopened it to continue it with its history). A
// continued session's run is a new run of the same workflow id (the
// earlier one has ended; a run still open is an error, not joined), given
// the history and the log's length, and its ids are seeded with the run
// id too. The package does not import pool: the CLI wraps RunRoot as the
// pool's Engine (pool.Options.Engine), so run and every serve front end
// submit through Pool.RunSink, which keeps the session's claim, its hooks
// and the processor's watchers.
//
// # Limits
//
// Async (background) tasks, spawn timeouts, hooks that do I/O, and
// toolsets (MCP) are not available under this engine: an async task is
// refused with an error result, a toolset is a toolset_error event.
package durable
