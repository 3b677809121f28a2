// Package hook is the typed hook points of docs/spec/HOOKS.md §2 and the
// Registry that wires them into the runtime.
//
// There are two kinds of point. An Emit[P] is observe-only: Fire calls its
// listeners (Func[P], added with Register) one by one, in registration
// order. A Seam[In, Out] is an interception chain (a waterfall): each
// listener (SeamFunc[In, Out], added with Use) gets the input and a next
// function; it may call next, change what next returns, or answer without
// calling next to veto or take over. The end of the chain is the runtime's
// default decision. Both are generic, so every point is typed; ForAgent
// scopes a listener to one agent's runs and to the delegations it starts.
//
// A Registry holds every point (OnSessionStart ... OnSubagentEnd) and
// Approvals, the agents' tool_approval policies and the sessions' "allow
// always" answers; it implements agent.Hooks and spawn.Lifecycle and is
// what pool.Options.Hooks takes. Its other state is in parts of their own,
// each with its lock: the start times of running tool calls (clock.go),
// the root sessions kept open across runs (keep.go), and what listeners
// leave for Close (closers, the shell environment file):
//
//	reg := hook.New(hook.Options{Logger: log})
//	reg.OnSubagentEnd.Register(func(ctx context.Context, e hook.SubagentEnd) error { ...; return nil })
//	reg.OnPreExecute.Use(func(ctx context.Context, c hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
//		if c.ToolName == "rm" {
//			return agent.ToolDecision{Action: agent.ToolDeny, Reason: "not here"}
//		}
//		return next(ctx, c)
//	})
//	p, _ := pool.New(m, pool.Options{Hooks: reg})
//
// Why one Registry, not one type per job. It answers four callers: the
// pool (session/start and session/end of root sessions, keep.go), the
// agent loop (agent.Hooks: prompt, request, tools, turn stop, compaction),
// tool approval (approvals.go: the policies, "allow always",
// approval/request, the broker) and spawn (spawn.Lifecycle: subagent
// start and end). These are adapters from four runtime interfaces onto
// one set of points, not four jobs with state of their own: the state is
// already in parts with one job and one lock each (ToolApprovals,
// keptSessions, callClock, the closers), and the jobs share listeners
// across the seams (tools/pre-execute's default is the approval policy,
// and its ask goes to approval/request; the command bridge, one set of
// Claude Code hooks, registers on points of all four at once and keeps
// their transcripts in one place). Split, a user would
// register the same listener set on four objects and hand four values to
// pool.Options, and the one place that says which point fires when (this
// package) would be four. The split was judged worse (issue 32, item 5).
//
// Package hook/command bridges Claude Code / Codex command hooks onto a
// Registry; docs/catalog.md lists every point and payload field.
//
// Guarantees (who may block whom, what is always delivered):
//
//   - Emit listeners can never fail, stop or stall a run beyond their
//     timeout (WithTimeout, default DefaultEmitTimeout). Each is called in
//     its own goroutine and containment: a panic, a returned error or a
//     timeout is logged and the listener skipped; later listeners are
//     still called; no panic escapes as an unhandled goroutine panic. A
//     listener still running at its timeout is abandoned (Close waits for
//     such stragglers). Emits never change control flow.
//   - Emits are delivered even when the run is being cancelled: listeners
//     get a context that is not cancelled with the run (only their own
//     deadline). subagent/end and session/end are always delivered.
//   - Seam listeners run synchronously on the run's goroutine and may
//     block it: that is their purpose (an approval waits for a human).
//     A panicking seam listener is logged and skipped (the chain goes on
//     as if it had called next). Seams are bounded only by the run's
//     context and a WithTimeout deadline on the listener's context.
//   - A skipped listener (panic, error, timeout) of a Registry is also
//     recorded in the event log of the session the point fired for, as a
//     custom event of type EventHookError ("hook_error", event_data a
//     Fault); for session/start and session/end in the stored log only.
//   - Payloads are copies (docs/spec/EVENTS.md invariant 10). Each listener of
//     an emit gets its own copy, so what one listener does to it changes
//     nothing the run, the caller or the next listener sees; this includes
//     subagent/end's last_assistant_message (content blocks, deep-copied
//     when the child settled; if a copy fails the event still fires
//     without the field). A tool's input is a frozen copy (change the
//     arguments with agent.ToolDecision.UpdatedInput); the model request of
//     agent/request is the session's own deep copy.
//   - subagent/start fires only after the child is ready (stored and
//     registered): a listener can Inject into it, and what it injects is
//     part of the child's first model request (the start is fired
//     synchronously before the child runs). subagent/end fires exactly
//     once, after subagent/start, for every child whose start fired;
//     neither fires when the child could not be created (depth limit,
//     unknown node, store failure).
//   - session/start and session/end bracket a root session: its run, or,
//     for a session its front end keeps open across runs
//     (pool.RunRequest.KeepSession), from its first run to EndSession.
//   - Approval fails closed: tools/pre-execute answering Ask goes to
//     approval/request; no listener, no answer, an unknown outcome,
//     rejected or cancelled all deny the call (the model is told why).
//     allowed_always is remembered for that tool in that session. A
//     request stored by a run whose process died goes through
//     approval/request again when the run is continued (ResumeApproval,
//     ApprovalRequest.RequestID: the broker shows its stored id).
//   - The agent's tool_approval policy (manifest) is the default of
//     tools/pre-execute: listeners that call next see it and the command
//     bridge combines it with its own decision, strictest first.
//   - Inputs the runtime acts on later are snapshotted when received: an
//     approval request (RequestApproval) and a spawn request (its history)
//     cannot be changed by their caller afterwards.
package hook

//go:generate go run ../internal/gencatalog -o ../docs/catalog.md
