package spawn

import (
	"context"
	"sync"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tool"
)

// Node is a runnable unit: an agent or a team.
type Node interface {
	Name() string
	Description() string
	// SourceType is event.SourceAgent, SourceTeamParallel or SourceTeamSequential.
	SourceType() event.SourceType
	// ModelID names the node's model ("" for teams).
	ModelID() string
	// Run runs the node in inv's session until it ends. It emits its own
	// events (unwrapped) to inv.Sink and must not return before everything
	// it started (tool calls, async children) has finished.
	Run(ctx context.Context, inv *Invocation) Result
}

// Result is how a node run ended.
type Result struct {
	Output     string           // final assistant text
	StopReason event.StopReason // event.Stop*
	Err        error            // set when StopReason is error or aborted
	Usage      event.Usage      // this session's own model usage
	Cost       float64          // this session's own cost
	// Messages are the messages this run added to the conversation
	// (prompt, assistant turns, tool results).
	Messages []model.Message
	// ClientCalls are the calls of client tools (Invocation.ClientTools)
	// that ended the run: stop reason completed, the calls left open in
	// the conversation until a later run brings their results
	// (Invocation.ClientResults).
	ClientCalls []model.Part
}

// Invocation is one run of a node in a session. It is created by NewRoot
// for a root run (the pool's, run with RunRoot) and by Spawn for a child.
type Invocation struct {
	Session session.Session // the session the node runs in, as created; read-only (the store keeps the live record)
	RunID   string
	Prompt  string
	History []model.Message // earlier conversation the node continues
	Sink    event.Sink      // where the node emits its own events
	Runtime *Runtime
	// ToolCallID is the parent's tool call that spawned this session, if any.
	ToolCallID string
	// Mechanism is how a child session was spawned ("" for a root run).
	Mechanism event.Mechanism
	// Env is the run's surroundings when a durable engine runs the
	// session (see Env); nil in this process's runs.
	Env Env
	// Toolsets are lent to this run by its caller, besides the agents'
	// own (pool.RunRequest.Toolsets: the MCP servers an ACP client named
	// for its session): every agent of the run offers their tools, its
	// own winning a name both have. Children spawned in the run are lent
	// them too. A run under an Env offers none (they are not where the
	// Env runs tools).
	Toolsets []tool.Toolset
	// Continue, when set, makes the run go on with a session whose run
	// stopped while tool calls of its tree waited for answers (see
	// Continuation): the node (a Continuer) settles the open calls of
	// History's last model turn instead of taking a Prompt.
	Continue *Continuation
	// Compact, set by the caller of a root run (pool.RunRequest.Compact),
	// makes an agent's run compact the session's conversation and answer
	// with the summary instead of taking a Prompt. It is a field of this
	// run's invocation, so the children the run spawns never see it.
	Compact *Compaction
	// Shell, set by the caller of a root run (pool.RunRequest.Shell), is a
	// command line an agent's run runs through its Bash tool, recorded in
	// the conversation, instead of taking a Prompt (OpenCode's shell).
	// Like Compact, it is this run's alone.
	Shell string
	// Model, set by the caller of a root run (pool.RunRequest.ModelOf),
	// is the model an agent's run uses for every model call of this run
	// instead of its own (a client chose another of the pool's models
	// for this turn). Like Compact, it is this run's alone: the children
	// it spawns run on their own models.
	Model *ModelChoice
	// Instructions, set by the caller of a root run
	// (pool.RunRequest.Instructions), are added to the system prompt of
	// every model request of this run (an AG-UI client's context). Not
	// stored, not lent to children: this run's alone.
	Instructions string
	// ClientTools, set by the caller of a root run
	// (pool.RunRequest.ClientTools), are tools the caller's client runs
	// itself (AG-UI front-end tools): offered to this run's model beside
	// the agent's own; a model turn that calls one ends the run
	// (Result.ClientCalls) once the turn's other calls have run. This
	// run's alone.
	ClientTools []model.ToolSpec
	// ClientResults, set by the caller of a root run
	// (pool.RunRequest.ClientResults), are the results of the client
	// calls left open by the session's last run, one per open call of
	// History's last model turn: the run records them (tool_call_complete
	// and a tool message) before its prompt and its first turn.
	ClientResults []model.Part

	run     *runState    // the root's rootRun, shared by the whole tree
	budgets *budgetScope // the budgets over the session (LimitSpend); nil: none
	rootRun runState
	h       handle
	wrap    wrapSink       // a child's Sink (Spawn), allocated with the invocation
	async   sync.WaitGroup // this session's async children

	workerHistory map[string][]model.Message // worker name -> kept history (reset_history_on_run: false); under h.mu
}

// ModelChoice is the model a run uses instead of its agent's own
// (Invocation.Model).
type ModelChoice struct {
	Model model.Model
	// ContextWindow is Model's context window in tokens for the agent's
	// compaction; 0: model.ContextWindowOf(Model), and none: no
	// compaction in the run.
	ContextWindow int
}

// Compaction asks a run for a manual compaction (Invocation.Compact).
type Compaction struct {
	// Instructions are added to the summarising model's request (Claude
	// Code's /compact text); "" for none.
	Instructions string
}

// Inject queues content for the session's next model request. Once the
// session has been torn down nothing more is queued; the refusal is logged.
func (inv *Invocation) Inject(content string) {
	if !inv.h.inbox.TryInject(content) && inv.Runtime != nil {
		inv.Runtime.Logger().Warn("inject after teardown dropped", "session", inv.Session.ID)
	}
}

// Inbox returns the session's queue of injected messages.
func (inv *Invocation) Inbox() *Inbox { return &inv.h.inbox }

// WaitInjected blocks until the session's inbox holds something (an
// injection, an async child's result) or no async child of the session
// is pending, and reports whether the inbox holds something; false when
// ctx ends first. It is how a node running in this process (Env nil)
// knows whether to take another turn: a durable engine waits through
// Env.Await instead.
func (inv *Invocation) WaitInjected(ctx context.Context) bool {
	inbox := inv.Inbox()
	for {
		if inbox.Len() > 0 {
			return true
		}
		if inv.PendingAsync() == 0 {
			// A child injects before its pending count drops: one that
			// ended since the check above is seen here.
			return inbox.Len() > 0
		}
		// Woken by an injection or by an async child ending.
		select {
		case <-inbox.Wait():
		case <-ctx.Done():
			return false
		}
	}
}

// Injected takes what was injected into the session since the last call:
// the node running in the session delivers it with its next model request.
func (inv *Invocation) Injected() []string { return texts(inv.h.inbox.drain()) }

// Injection is one item of a session's inbox: its text, which the model
// reads as a user message, and, for a message sent to the session
// (Runtime.Message), the event that shows its delivery.
type Injection struct {
	Text string
	// Event, when set, is emitted into the session's stream when the
	// text is delivered (a MessageEvent): front ends show it as a user
	// message of the session.
	Event event.Event
}

// TakeInjected is Injected with the events of the messages among them:
// a node that emits its own events (the agent) emits each one as it
// delivers its text.
func (inv *Invocation) TakeInjected() []Injection { return inv.h.inbox.drain() }

// Record stores e in the session's event log without sending it down the
// live stream: for events outside the run's span (the session/start and
// session/end hooks fire before the run's first event and after its last).
// It goes through the run's Recorder, in the order of the stream; a run
// whose root sink is no Recorder stores no events, and this one neither.
func (inv *Invocation) Record(e event.Event) {
	if inv.run != nil && inv.run.rec != nil {
		inv.run.rec.Record(inv.Session.ID, e)
	}
}

// Recorder is the root sink of a run that stores its events
// (record.Recorder): every event it is given is stored in the log of
// the session that produced it, in stream order, and passed on. Record
// stores an event of session sessionID in the same order without passing
// it on (Invocation.Record).
type Recorder interface {
	event.Sink
	Record(sessionID string, e event.Event)
}

// Syncer is a root sink that may hand an event on to its consumers after
// its Emit returned (record.Recorder, when another goroutine of the run
// is delivering at the time). Sync returns once every event emitted
// before it has reached all of them.
type Syncer interface {
	Sync()
}

// Sync returns once every event the run emitted before the call has
// reached the consumers of its root sink (a Syncer; with any other sink,
// at once: Emit was synchronous). Spawn calls it after a child's
// spawn_session_start, before the child runs, so that a consumer that
// cancels the run on an event has done so before any child started
// after that event runs. It must not be called from a consumer of the
// run's events.
func (inv *Invocation) Sync() {
	if inv.run != nil && inv.run.sync != nil {
		inv.run.sync.Sync()
	}
}

// PendingAsync reports how many async children of this session still run.
func (inv *Invocation) PendingAsync() int { return int(inv.h.pendingAsync.Load()) }

// Depth is the session's depth.
func (inv *Invocation) Depth() int { return inv.Session.Depth }

// isRoot reports whether inv is the root of its run (NewRoot).
func (inv *Invocation) isRoot() bool { return inv.run == &inv.rootRun }

// addChildTotals is called by a child's spawn when it ends, to roll up usage.
func (inv *Invocation) addChildTotals(u event.Usage, cost float64) {
	h := &inv.h
	h.mu.Lock()
	h.childUsage.Add(u)
	h.childCost += cost
	h.mu.Unlock()
}

// childTotals returns the usage and cost of every descendant that ended.
func (inv *Invocation) childTotals() (event.Usage, float64) {
	h := &inv.h
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.childUsage, h.childCost
}

// The invocation travels in the context because what needs it is called
// through interfaces that take a context and no run: tool.Tool.Call (a
// program's own tools, MCP, the task tools that spawn from it), the
// hook listeners and the store. It is the run itself, not a flag that
// changes what the run does: those are fields of Invocation (Compact,
// Shell, Continue, Toolsets). A tool that only needs its session's id has
// it in tool.Call.SessionID.
type invocationKey struct{}

// WithInvocation returns a context that carries inv, so that tools can find
// the session they run in.
func WithInvocation(ctx context.Context, inv *Invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

// InvocationFrom returns the invocation a tool runs in, or nil.
func InvocationFrom(ctx context.Context) *Invocation {
	inv, _ := ctx.Value(invocationKey{}).(*Invocation)
	return inv
}
