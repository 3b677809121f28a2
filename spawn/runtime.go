package spawn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// Limits bound delegation.
type Limits struct {
	MaxDepth    int           // deepest allowed child depth; default 5
	MaxChildren int           // concurrent children per session; more wait; default 64
	MaxSpawns   int           // spawns per root run; default 1000
	Timeout     time.Duration // per-spawn timeout; 0 = none
}

// Defaults of Limits.
const (
	DefaultMaxDepth    = 5
	DefaultMaxChildren = 64
	DefaultMaxSpawns   = 1000
)

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxChildren <= 0 {
		l.MaxChildren = DefaultMaxChildren
	}
	if l.MaxSpawns <= 0 {
		l.MaxSpawns = DefaultMaxSpawns
	}
	return l
}

// Errors returned by Spawn when a child cannot be created.
var (
	ErrDepthLimit  = errors.New("depth limit reached")
	ErrSpawnBudget = errors.New("spawn budget of the run exhausted")
	ErrUnknownNode = errors.New("unknown agent or team")
)

// Lifecycle observes the subagent lifecycle; the hook subsystem implements
// it. Start is called after the child is ready (stored and registered) and
// before its first model request; End exactly once after Start. Both run
// synchronously on the spawning goroutine, with a context that carries the
// parent's Invocation (InvocationFrom), so an observer can reach the
// Runtime (for example to Inject into the child).
type Lifecycle interface {
	SubagentStart(ctx context.Context, info StartInfo)
	SubagentEnd(ctx context.Context, info EndInfo)
}

// StartInfo describes a child that is about to run.
type StartInfo struct {
	ChildSessionID  string
	ParentSessionID string
	Name            string
	SourceType      event.SourceType
	Depth           int
	Mechanism       event.Mechanism
	RunMode         event.RunMode
	ParentAgent     string // the agent (or team) whose session spawned the child
}

// EndInfo describes a child that ended.
type EndInfo struct {
	StartInfo
	StopReason           event.StopReason
	LastAssistantMessage string
	// LastAssistant is the child's final output as content blocks: a deep
	// copy taken when the child settled, before its caller saw the result.
	// Nil when there is no output or no result.
	LastAssistant []model.Part
	HasResult     bool // false on an infrastructure fault (no result at all)
	Usage         event.Usage
	DurationMS    int64
}

// Config configures a Runtime.
type Config struct {
	Store     session.Store
	Limits    Limits
	Lifecycle Lifecycle // may be nil
	Logger    *slog.Logger
	// Lookup finds a node by name; Names lists them (agents, then teams).
	Lookup func(name string) (Node, bool)
	Names  func() []string
}

// Runtime holds what every spawn in a pool shares: the store, limits and
// the registry of running sessions. (Async tasks belong to their root run:
// see Invocation.Task.)
type Runtime struct {
	cfg    Config
	limits Limits
	log    *slog.Logger

	// sessions is the registry of running sessions. A map under a mutex
	// rather than a sync.Map: every spawn stores and deletes one entry, and
	// sync.Map allocates a node per store; a plain Mutex because lookups
	// (Inject, Running) are rarer than those writes.
	sessMu   sync.Mutex
	sessions map[string]*handle
	busy     sync.Map // node name -> *atomic.Int64 running sessions
}

// NewRuntime builds a Runtime.
func NewRuntime(cfg Config) *Runtime {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Lookup == nil {
		cfg.Lookup = func(string) (Node, bool) { return nil, false }
	}
	if cfg.Names == nil {
		cfg.Names = func() []string { return nil }
	}
	return &Runtime{cfg: cfg, limits: cfg.Limits.withDefaults(), log: cfg.Logger, sessions: map[string]*handle{}}
}

// register registers h as the running session sessionID, unless a
// session of that id is registered: the check and the registration are
// one step, so that two runs of one session cannot both register.
func (rt *Runtime) register(inv *Invocation) bool {
	rt.sessMu.Lock()
	defer rt.sessMu.Unlock()
	if _, taken := rt.sessions[inv.Session.ID]; taken {
		return false
	}
	inv.h.inv = inv
	rt.sessions[inv.Session.ID] = &inv.h
	return true
}

// unregister removes the registration of sessionID if it is h's: a run
// that was refused, or ends late, never unregisters another run.
func (rt *Runtime) unregister(sessionID string, h *handle) {
	rt.sessMu.Lock()
	if rt.sessions[sessionID] == h {
		delete(rt.sessions, sessionID)
	}
	rt.sessMu.Unlock()
}

func (rt *Runtime) lookupSession(sessionID string) (*handle, bool) {
	rt.sessMu.Lock()
	h, ok := rt.sessions[sessionID]
	rt.sessMu.Unlock()
	return h, ok
}

// Store returns the runtime's store.
func (rt *Runtime) Store() session.Store { return rt.cfg.Store }

// Limits returns the limits in force.
func (rt *Runtime) Limits() Limits { return rt.limits }

// Lifecycle returns the observer of the subagent lifecycle (nil: none).
func (rt *Runtime) Lifecycle() Lifecycle { return rt.cfg.Lifecycle }

// Logger returns the runtime's logger.
func (rt *Runtime) Logger() *slog.Logger { return rt.log }

// Lookup finds a node by name.
func (rt *Runtime) Lookup(name string) (Node, bool) { return rt.cfg.Lookup(name) }

// NodeNames lists the names of the pool's nodes.
func (rt *Runtime) NodeNames() []string { return rt.cfg.Names() }

// Busy reports how many sessions of the named node are running now.
func (rt *Runtime) Busy(name string) int64 {
	if v, ok := rt.busy.Load(name); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func (rt *Runtime) busyCounter(name string) *atomic.Int64 {
	if v, ok := rt.busy.Load(name); ok {
		return v.(*atomic.Int64)
	}
	v, _ := rt.busy.LoadOrStore(name, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// Inject queues content for the next model request of a running (or idle
// but registered) session. It fails when no such session is registered.
func (rt *Runtime) Inject(sessionID, content string) error {
	h, ok := rt.lookupSession(sessionID)
	if !ok {
		return fmt.Errorf("inject: %w: %s is not running", session.ErrNotFound, sessionID)
	}
	if !h.inbox.TryInject(content) {
		return fmt.Errorf("inject: %w: %s has ended", session.ErrNotFound, sessionID)
	}
	return nil
}

// Running reports whether a session is registered (running).
func (rt *Runtime) Running(sessionID string) bool {
	_, ok := rt.lookupSession(sessionID)
	return ok
}

// handle is the registry entry of a running session. It lives inside the
// session's Invocation (one allocation for both).
type handle struct {
	inv          *Invocation // the invocation h lives in (set by register)
	inbox        Inbox
	sem          chan struct{} // concurrency slots for this session's children; see slots
	pendingAsync atomic.Int64

	mu         sync.Mutex
	childUsage event.Usage
	childCost  float64
	// What Cancel needs (cancel.go): the cancel function of the run's
	// context, a cause asked for before it was made, and the channel
	// closed once the run has ended (made by the first Cancel).
	cancel      context.CancelCauseFunc
	cancelCause error
	ended       chan struct{}
	finished    bool
}

// slots returns the session's semaphore of child slots, made on the first
// spawn (most sessions never spawn).
func (h *handle) slots(n int) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sem == nil {
		h.sem = make(chan struct{}, n)
	}
	return h.sem
}

// runState is shared by every session of one root run.
type runState struct {
	spawns atomic.Int64 // spawns taken from the budget (max_spawns)
	rec    Recorder     // the root's sink when it is a Recorder, else nil
	sync   Syncer       // the root's sink when it is a Syncer, else nil
	tasks  taskTable    // the run's async tasks, gone with the run
	// rootDepth is the root session's depth: more than 0 when the run
	// continues a child session (max_depth still counts from its tree's
	// root, and a refusal says so).
	rootDepth int
	// The first refusal by each limit is logged; the rest are not (they
	// are all in the stream).
	depthWarned, budgetWarned atomic.Bool
	scope                     runScope   // what the run's nodes keep for its length (RunScoped)
	budget                    budgetGate // the lock over the run's budgets (budget.go)
}

// NewRoot registers a root session and returns its invocation; sink gets
// the run's stream (a Recorder to store it). Run it with RunRoot, or run
// its node by hand and call Release. It fails with a *session.RunningError
// when the session is registered already (a run of it is going on in this
// runtime). The store's claim (session.Store.Claim) is the caller's: the
// pool takes it before.
func (rt *Runtime) NewRoot(s session.Session, runID, prompt string, history []model.Message, sink event.Sink) (*Invocation, error) {
	inv := &Invocation{
		Session: s, RunID: runID, Prompt: prompt, History: history, Sink: sink, Runtime: rt,
	}
	inv.run = &inv.rootRun
	inv.rootRun.rec, _ = sink.(Recorder)
	inv.rootRun.sync, _ = sink.(Syncer)
	inv.rootRun.rootDepth = s.Depth
	if !rt.register(inv) {
		return nil, &session.RunningError{SessionID: s.ID, Claimed: s.ID, Owner: session.ThisProcess()}
	}
	return inv, nil
}

// Release waits for the session's async children, ends what the nodes of
// a root's run kept (RunScoped), unregisters the session and closes its
// inbox. What was injected and never delivered is returned so
// that the caller can store it (nothing injected is lost at teardown).
func (rt *Runtime) Release(inv *Invocation) []string {
	inv.async.Wait()
	if inv.isRoot() {
		// Every session of the run has ended: what its nodes kept goes.
		inv.run.scope.end()
	}
	rt.unregister(inv.Session.ID, &inv.h)
	return inv.h.inbox.close()
}

// Inbox is a session's queue of injected context. Safe for concurrent use.
// The zero value is ready.
type Inbox struct {
	mu     sync.Mutex
	queue  []Injection
	closed bool
	// notify has a value when queue may be non-empty or an async child
	// may have ended. It is made by the first Wait (most sessions never
	// wait), so a signal sent before that finds no channel; Wait makes it
	// with a value in it, which only costs a waiter one extra look.
	notify chan struct{}
}

// Inject queues content. Content injected once the session has been torn
// down is dropped; use TryInject to learn whether it was queued.
func (b *Inbox) Inject(content string) { b.TryInject(content) }

// TryInject queues content and reports whether it was queued: false once
// the inbox is closed (its session has been torn down).
func (b *Inbox) TryInject(content string) bool {
	return b.tryQueue(Injection{Text: content})
}

// tryQueue queues in unless the inbox is closed.
func (b *Inbox) tryQueue(in Injection) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	b.queue = append(b.queue, in)
	b.mu.Unlock()
	b.wake()
	return true
}

// close takes everything queued and refuses later injections, atomically:
// every injection is either in the returned slice or reported as refused.
func (b *Inbox) close() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	q := b.queue
	b.queue = nil
	return texts(q)
}

// texts returns the texts of q.
func texts(q []Injection) []string {
	if len(q) == 0 {
		return nil
	}
	out := make([]string, len(q))
	for i, in := range q {
		out[i] = in.Text
	}
	return out
}

// Len reports how many injections are queued.
func (b *Inbox) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// wake signals Wait without queueing anything.
func (b *Inbox) wake() {
	b.mu.Lock()
	ch := b.notify
	b.mu.Unlock()
	if ch == nil {
		return // no waiter yet: the first Wait starts signalled
	}
	select {
	case ch <- struct{}{}:
	default:
	}
}

// drain takes everything queued.
func (b *Inbox) drain() []Injection {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queue
	b.queue = nil
	return q
}

// Wait returns a channel that receives when something may have been
// injected or an async child of the session has ended. A receive may be
// spurious: check the condition again after it.
func (b *Inbox) Wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.notify == nil {
		b.notify = make(chan struct{}, 1)
		b.notify <- struct{}{}
	}
	return b.notify
}

// NodeInfo describes a node for list_available_nodes.
type NodeInfo struct {
	Name        string           `json:"name"`
	Type        string           `json:"type"` // agent | team
	SourceType  event.SourceType `json:"source_type"`
	Description string           `json:"description,omitempty"`
	Running     int64            `json:"running"`
}

// Nodes lists the pool's nodes, sorted by name.
func (rt *Runtime) Nodes() []NodeInfo {
	var out []NodeInfo
	for _, n := range rt.NodeNames() {
		node, ok := rt.Lookup(n)
		if !ok {
			continue
		}
		typ := "agent"
		if node.SourceType() != event.SourceAgent {
			typ = "team"
		}
		out = append(out, NodeInfo{Name: n, Type: typ, SourceType: node.SourceType(), Description: node.Description(), Running: rt.Busy(n)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
