package spawn

import (
	"context"
	"sync"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tool"
)

// Env is the seam between a session's run (the agent loop, a team) and its
// surroundings: what the run needs that is not its own logic. A nil Env
// (the default, Invocation.Env unset) is this process: the model is
// streamed here, tools run here, children are spawned here, concurrency is
// goroutines, the clock is time.Now. A durable engine (package durable,
// Temporal) sets an Env whose every method is a step of its workflow: the
// same loop code then runs as a deterministic workflow whose model turns
// and tool calls are activities and whose children are child workflows.
//
// Every call that can block takes the ctx of the caller's branch (the one
// Parallel gave it): an engine keeps its own per-branch state in it.
type Env interface {
	// Turn runs one model turn of agent (a node of the pool, by name) in
	// inv's session and returns what it produced. The turn's events
	// (part_start, part_delta, part_end) are the Env's to deliver: they
	// are not emitted to inv.Sink by the caller.
	Turn(ctx context.Context, inv *Invocation, agent string, req *model.Request) (Turn, error)
	// Tool runs one call of a tool that is not Inline and returns its
	// result; a failure is an error result.
	Tool(ctx context.Context, inv *Invocation, agent string, call tool.Call) tool.Result
	// Spawn runs the child of req (its limits checked, req.Node set) as
	// Spawn does: it emits the child's spawn_session_start and
	// spawn_session_end to parent.Sink exactly once each, or returns an
	// error having emitted nothing. It reports the child's run to the
	// parent through kids: its totals, and, for an async child, its task.
	Spawn(ctx context.Context, parent *Invocation, req Request, kids Children) (Child, error)
	// Parallel runs fn(ctx, i) for every i in [0, n) concurrently and
	// returns when all have returned; each fn gets its branch's ctx.
	Parallel(ctx context.Context, n int, fn func(ctx context.Context, i int))
	// Now is the run's clock.
	Now(ctx context.Context) time.Time
	// NewID returns a new ascending id with prefix (package id).
	NewID(ctx context.Context, prefix string) string
	// Await blocks until cond() holds. cond reads the run's own state,
	// which the run's other branches and its async children change (the
	// inbox, PendingAsync); it is checked again whenever that may have
	// changed. A cancelled ctx does not end the wait: cond says when to
	// stop (the run's async children end after a cancellation too).
	Await(ctx context.Context, cond func() bool)
}

// Steerer is implemented by an Env whose children run elsewhere (a
// durable engine: each child a workflow of its own), where this
// runtime's Cancel and Message do not reach them: the parent tools
// task_stop and send_message steer the children of a session run under
// such an Env through it. Its methods are steps of the session's run,
// deterministic as the others.
type Steerer interface {
	// Child is the child sessionID of inv's session as the Env ran it in
	// this run: ID, ParentID, AgentName, and Status (running, or its end:
	// completed, aborted, error) with StopReason. false: no such child.
	Child(ctx context.Context, inv *Invocation, sessionID string) (session.Session, bool)
	// StopChild cancels the running child sessionID with cause (its
	// subtree with it) and waits, at most wait, for its end; ended is
	// false when it has not ended by then.
	StopChild(ctx context.Context, inv *Invocation, sessionID string, cause *CancelledError, wait time.Duration) (ended bool, err error)
	// MessageChild delivers from's text to the running child sessionID,
	// read at its next model request as Runtime.Message's is.
	MessageChild(ctx context.Context, inv *Invocation, sessionID string, from Sender, text string) error
}

// steerer is inv's Env as a Steerer, nil when it is none (this process).
func (inv *Invocation) steerer() Steerer {
	if inv.Env == nil {
		return nil
	}
	s, _ := inv.Env.(Steerer)
	return s
}

// Turn is what one model turn produced.
type Turn struct {
	Message model.Message `json:"message"`
	Finish  string        `json:"finish"`
	Usage   event.Usage   `json:"usage"`
	Cost    float64       `json:"cost"`
	// Stored reports that the Env has stored Message in the session's
	// conversation already (the caller must not store it again).
	Stored bool `json:"stored,omitempty"`
}

// Inline is implemented by the tools that act on the session's run rather
// than on the world: the delegations (task, ask_<worker>, delegate_to,
// ask_agent), whose code only decides which child to spawn (through Spawn)
// and which result that child's end gives, and the readers of the run's
// task table and node list. An Env runs them inline, in the session's own
// run, where Spawn reaches it, rather than as an opaque tool call; their
// code must be deterministic given the run (no I/O, no clock).
type Inline interface {
	RunsInline() bool
}

// IsInline reports whether t is an Inline tool.
func IsInline(t tool.Tool) bool {
	d, ok := t.(Inline)
	return ok && d.RunsInline()
}

// Parallel runs fn(ctx, i) for i in [0, n) concurrently, through inv's Env
// when it has one (else goroutines), and waits for all.
func Parallel(ctx context.Context, inv *Invocation, n int, fn func(ctx context.Context, i int)) {
	if inv != nil && inv.Env != nil {
		inv.Env.Parallel(ctx, n, fn)
		return
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(ctx, i) })
	}
	wg.Wait()
}

// NewEnvInvocation makes the invocation of a session that runs under env
// (a durable engine's run of one session): its own run state (the spawn
// budget counts from it), registered nowhere, with no inbox deliveries
// (Inject is the engine's). sink gets the session's own events.
func NewEnvInvocation(rt *Runtime, env Env, s session.Session, runID, prompt, toolCallID string, history []model.Message, sink event.Sink) *Invocation {
	inv := &Invocation{
		Session: s, RunID: runID, Prompt: prompt, History: history, Sink: sink, Runtime: rt,
		ToolCallID: toolCallID, Env: env,
	}
	inv.run = &inv.rootRun
	inv.rootRun.rootDepth = s.Depth
	return inv
}

// ChildTotals returns the usage and cost of every descendant that ended.
func (inv *Invocation) ChildTotals() (event.Usage, float64) { return inv.childTotals() }

// AwaitAsync waits until every async child of the session has ended:
// through its Env when it has one (a wait on a WaitGroup blocks the goroutine, which
// a workflow must not).
func (inv *Invocation) AwaitAsync(ctx context.Context) {
	if inv.Env == nil {
		inv.async.Wait()
		return
	}
	inv.Env.Await(ctx, func() bool { return inv.PendingAsync() == 0 })
}

// Children is the parent's side of the children an Env runs elsewhere
// (Env.Spawn gets it): what the Env reports back so that the parent's
// run sees them as it sees the children it runs itself. Only an Env's
// Spawn gets one; a node cannot report children it did not spawn.
type Children struct{ parent *Invocation }

// AddTotals adds a child's usage and cost (its own and its descendants')
// to the parent's totals of its ended children.
func (c Children) AddTotals(u event.Usage, cost float64) { c.parent.addChildTotals(u, cost) }

// StartTask records an async child that the Env started: its task
// (taskID) in the run's task table (task_status, task_output find it),
// pending (Invocation.PendingAsync) until EndTask.
func (c Children) StartTask(taskID, sessionID, node string) *Task {
	t := &Task{ID: taskID, SessionID: sessionID, Node: node, done: make(chan struct{})}
	c.parent.run.tasks.add(t)
	c.parent.h.pendingAsync.Add(1)
	return t
}

// EndTask ends a task of StartTask as an async child's end does in this
// process: its result is the task's, and the message that tells it is
// injected into the parent's session (its next model request gets it)
// before the task stops being pending.
func (c Children) EndTask(t *Task, res Result) { c.parent.endTask(t, res) }

// LastAssistant returns a deep copy of the content blocks of a child's
// final output, as subagent/end gets them (EndInfo.LastAssistant).
func LastAssistant(res Result) []model.Part { return lastAssistant(res) }

// Settle completes a node's stop reason as a session's run does when it
// ends (completed, error, or aborted under a cancelled ctx): for an Env that
// ends a session's run itself.
func Settle(ctx context.Context, res *Result) { settle(ctx, res) }
