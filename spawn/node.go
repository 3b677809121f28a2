package spawn

import (
	"context"
	"sync"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// Node is a runnable unit: an agent or a team.
type Node interface {
	Name() string
	Description() string
	// SourceType is event.SourceAgent, SourceTeamParallel or SourceTeamSequential.
	SourceType() string
	// ModelID names the node's model ("" for teams).
	ModelID() string
	// Run runs the node in inv's session until it ends. It emits its own
	// events (unwrapped) to inv.Sink and must not return before everything
	// it started (tool calls, async children) has finished.
	Run(ctx context.Context, inv *Invocation) Result
}

// Result is how a node run ended.
type Result struct {
	Output     string      // final assistant text
	StopReason string      // event.Stop*
	Err        error       // set when StopReason is error or aborted
	Usage      event.Usage // this session's own model usage
	Cost       float64     // this session's own cost
	// Messages are the messages this run added to the conversation
	// (prompt, assistant turns, tool results).
	Messages []model.Message
}

// Invocation is one run of a node in a session. It is created by the pool
// for a root run and by Spawn for a child.
type Invocation struct {
	Session session.Session // the session the node runs in, as created; read-only (the store keeps the live record)
	RunID   string
	Prompt  string
	History []model.Message // earlier conversation the node continues
	Sink    event.Sink      // where the node emits its own events
	Runtime *Runtime
	// ToolCallID is the parent's tool call that spawned this session, if any.
	ToolCallID string
	// NodeState belongs to the node running in the invocation; the agent
	// keeps its run here so that its tools can reach the conversation
	// (agent.HistoryFrom).
	NodeState any

	ictx    invocationCtx // see RunContext
	run     *runState     // the root's rootRun, shared by the whole tree
	rootRun runState
	h       handle
	wrap    wrapSink       // a child's Sink (Spawn), allocated with the invocation
	async   sync.WaitGroup // this session's async children

	workerHistory map[string][]model.Message // worker name -> kept history (reset_history_on_run: false); under h.mu
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

// PendingAsync reports how many async children of this session still run.
func (inv *Invocation) PendingAsync() int { return int(inv.h.pendingAsync.Load()) }

// WaitAsync waits until every async child of this session has ended.
func (inv *Invocation) WaitAsync() { inv.async.Wait() }

// Depth is the session's depth.
func (inv *Invocation) Depth() int { return inv.Session.Depth }

// addChildTotals is called by a child's spawn when it ends, to roll up usage.
func (inv *Invocation) addChildTotals(u event.Usage, cost float64) {
	h := &inv.h
	h.mu.Lock()
	h.childUsage.Add(u)
	h.childCost += cost
	h.mu.Unlock()
}

// ChildTotals returns the usage and cost of every descendant that ended.
func (inv *Invocation) ChildTotals() (event.Usage, float64) {
	h := &inv.h
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.childUsage, h.childCost
}

type invocationKey struct{}

// WithInvocation returns a context that carries inv, so that tools can find
// the session they run in.
func WithInvocation(ctx context.Context, inv *Invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

// RunContext is WithInvocation for the context a node runs in: the
// context lives inside inv (no allocation). It is meant to be called once
// per invocation, by whoever runs its node (Spawn, the pool).
func (inv *Invocation) RunContext(ctx context.Context) context.Context {
	inv.ictx = invocationCtx{Context: ctx, inv: inv}
	return &inv.ictx
}

// invocationCtx is a context that carries an invocation, like the one
// WithInvocation makes, stored in the invocation itself.
type invocationCtx struct {
	context.Context
	inv *Invocation
}

func (c *invocationCtx) Value(key any) any {
	if key == (invocationKey{}) {
		return c.inv
	}
	return c.Context.Value(key)
}

// InvocationFrom returns the invocation a tool runs in, or nil.
func InvocationFrom(ctx context.Context) *Invocation {
	inv, _ := ctx.Value(invocationKey{}).(*Invocation)
	return inv
}
