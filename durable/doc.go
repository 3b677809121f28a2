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
//     generator seeded with the session id; a child's ids from one seeded
//     with its place among the run's spawns (a team member's: its index),
//     so that a workflow task done again after its worker died names the
//     children the lost task had created alike.
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
// message, when the first attempt died between the two writes). A
// cancelled session waits for the activity of its current step to end
// before it writes its end (WaitForCancellation): nothing a step writes
// comes after the session's end.
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
// # Async tasks, limits, hooks, toolsets
//
// An async (background) task is a child workflow started in a workflow
// coroutine of its own: the task call returns its task id at once, the
// child's end is delivered to the parent's inbox (its next model request)
// and the parent waits for its outstanding children before it ends, as in
// this process (spawn.Env.Await, spawn.Children.StartTask and EndTask).
// max_children is a count of the session's running children (further
// spawns wait), max_spawns one count for the whole run, on the record of
// the run's first session (MetaSpawnBudget, SessionInput.Budget), taken by
// the Spawns activity (durablewire.SpawnBudget: one spawn for a delegation, a
// team's reservation at once, once per key under retries), so that
// children running at the same time refuse exactly as in this process; the
// spawn timeout a workflow timer in the child that cancels its run with
// spawn.ErrTimeout as the cause (SessionInput.Timeout).
//
// Hooks run on the worker: a hook point with listeners is the Hook
// activity (durablewire.HookEnv for the agent's points; subagent/start and /end
// and the root's session/start and /end from the workflow when the pool
// has them and the submitter does not run them itself, as pool.RunSink
// does: SessionInput.SubmitterHooks); its answer and what it injected come back to the workflow,
// the events it emitted are journaled. A point without listeners is
// called in the workflow (it does no I/O: agent.QuietHooks). An agent's
// toolsets (MCP servers) are listed by the Toolsets activity and their
// calls are Tool activities, on the worker (durablewire.ToolsetEnv).
//
// # Approvals
//
// With RootRequest.Approver (the submitter has a broker its front ends
// attach to), a tool call whose rule is "ask" is not asked on the worker,
// where nobody is attached: the hooks give the ask back to the workflow
// (internal/durablewire.ApprovalEnv), which writes an approval_requested
// event to the session's log at once, waits for the SignalApproval of
// that request (or Approvals.Timeout, a workflow timer; or the run's
// cancellation), writes approval_replied and runs or denies the call.
// Guarantees: one answer per request (a signal for a request that is not
// waiting is dropped); the wait outlives the submitter and the workers;
// the Approver shows a request in its broker only once the poll that read
// it is over, so a request read with its answer is never shown, and
// withdraws it when its answer is read; Approver.Reopen shows again the
// open requests of every root running on the engine (a submitter started
// again). docs/approvals.md, Durable.
//
// # Limits
//
// A spawn that does not come from a team's reservation costs one Spawns
// activity (a store update of the run's first session) before the child
// is created. Toolsets lent to a run (pool.RunRequest.Toolsets: a
// client's MCP servers) are not offered: they are not on the workers. A hook's
// per-process state (the command bridge's transcripts, loop guard, a
// tool call's duration) does not travel between workers; what an async
// command hook says after its step ended is dropped; hook_run records of
// session/start and session/end are not stored. A turn's text
// reaches the follower when the turn is complete.
package durable
