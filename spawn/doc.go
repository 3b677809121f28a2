// Package spawn is the one delegation primitive of agentpool
// (docs/spec/EVENTS.md §4) and the thin mechanisms built on it: the subagent
// task tools, worker tools, and the Go API for manual spawns. Teams
// (package team) call it too.
//
// Spawn checks the depth limit, the per-run spawn budget and the per-session
// concurrency limit (further spawns wait); creates and stores the child
// session; registers it so it can be looked up and injected into; emits
// spawn_session_start; runs the node with a sink that wraps every child
// event exactly once (nested wrappers are flattened, the path extended);
// emits spawn_session_end exactly once, whatever happened (success, error,
// panic, cancellation, timeout); and unregisters the child.
//
// A spawn refused by a limit returns a *LimitError (errors.Is ErrDepthLimit
// or ErrSpawnBudget) and emits nothing; the mechanisms that ask for spawns
// (the task and worker tools, teams) tell the stream with a spawn_refused
// event (ReportRefused), and the runtime logs the first refusal by each
// limit in a run. Depth counts from the root of the session tree, also when
// a run continues a child session; the refusal then says so. Reserve takes
// spawns of the run's budget ahead, all or none, for spawns that must all
// happen (a team's members). The budget is counted in this process, unless
// the invocation's Env keeps it (internal/durablewire.SpawnBudget: a durable engine, whose
// sessions run as workflows of their own, keeps it in the shared store).
//
// Ordering: everything a child emits reaches the parent sink after its
// spawn_session_start and before its spawn_session_end, because the node's
// Run does not return until its own work (tools, async children) is done.
// If creating the child fails, Spawn returns an error and emits nothing.
//
// A child's run and a root's (Runtime.RunRoot, which the pool calls) go
// through one session lifecycle: the node runs with its Invocation in the
// context; a panic ends it with stop reason error; the session's async
// children are waited for; the session is unregistered and its inbox
// closed, and what was injected but never delivered is stored with its
// conversation; then the session's final record is written (status, stop
// reason, usage, cost, totals with the descendants', duration, error), by
// this one writer.
//
// A run that stopped while tool calls of its tree waited for a person's
// answer goes on from where it stopped: a Continuation (set as
// Invocation.Continue) makes a Continuer node (the agent, a team) settle
// the open calls of its last turn instead of taking a prompt, and
// ContinueChild runs a waiting child on in its parent's run, as Spawn runs
// a new one, without creating it or announcing it again.
//
// Nothing here assumes a child runs in the same process as its parent:
// children are identified by session id, and a node only sees an
// Invocation (ids, prompt, history, a sink).
package spawn
