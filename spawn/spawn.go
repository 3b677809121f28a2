package spawn

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// Request asks Spawn to run a node in a new child session.
type Request struct {
	Node        Node
	Prompt      string
	Description string
	Mechanism   event.Mechanism // event.Mechanism*
	Async       bool            // run in the background; Spawn returns at once
	ToolCallID  string          // the parent's tool call that spawns, if any
	History     []model.Message
	Timeout     time.Duration // overrides Limits.Timeout when > 0
	Metadata    map[string]any
	// Reservation, when set, is where the spawn's share of the run's
	// budget comes from (see Reserve); else from what is left of it.
	Reservation *Reservation
}

// Child is a spawned child. For a sync spawn Result is its outcome; for an
// async spawn TaskID names the background task and Result is empty.
type Child struct {
	SessionID string
	TaskID    string
	Result    Result
}

// ErrTimeout is the cause of a child cancelled by its spawn timeout.
var ErrTimeout = errors.New("spawn timeout")

// Spawn runs req.Node in a new child session of parent. It returns an error,
// having emitted nothing, when the child cannot be created; otherwise the
// child's start and end are emitted to parent.Sink exactly once each.
func Spawn(ctx context.Context, parent *Invocation, req Request) (Child, error) {
	rt := parent.Runtime
	if req.Node == nil {
		return Child{}, ErrUnknownNode
	}
	if req.Mechanism == "" {
		req.Mechanism = event.MechanismManual
	}
	depth := parent.Session.Depth + 1
	if err := rt.checkDepth(parent, req.Node, depth); err != nil {
		return Child{}, err
	}
	if err := rt.takeSpawn(ctx, parent, req.Node, req.Reservation); err != nil {
		return Child{}, err
	}
	if parent.Env != nil {
		return parent.Env.Spawn(ctx, parent, req, Children{parent: parent})
	}
	// Concurrency: wait for a slot among the parent's running children.
	sem := parent.h.slots(rt.limits.MaxChildren)
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return Child{}, fmt.Errorf("cannot spawn %s: %w", req.Node.Name(), context.Cause(ctx))
	}

	now := time.Now()
	title := req.Description
	if title == "" {
		title = req.Node.Name()
	}
	child := session.Session{
		ID:         id.DescendingAt(id.Session, now),
		ParentID:   parent.Session.ID,
		Depth:      depth,
		AgentName:  req.Node.Name(),
		SourceType: req.Node.SourceType(),
		Title:      title + " (@" + req.Node.Name() + " subagent)",
		Status:     session.StatusRunning,
		CreatedAt:  now,
		UpdatedAt:  now,
	}
	if err := rt.cfg.Store.CreateSession(ctx, child); err != nil {
		<-sem
		return Child{}, fmt.Errorf("cannot spawn %s: store: %w", req.Node.Name(), err)
	}

	return rt.launch(ctx, parent, req, child, model.CloneMessages(req.History), sem, now, "")
}

// launch runs req.Node in the child session child (stored, and created or
// made running again), whose slot among parent's children sem holds:
// registers it, announces it (spawn_session_start, the subagent/start
// hook) and runs it, sync or in the background (see Spawn). resumed is
// "" for a new child; for a finished child continued (Resume) it is
// who continued it, which its start's metadata says.
func (rt *Runtime) launch(ctx context.Context, parent *Invocation, req Request, child session.Session, history []model.Message, sem chan struct{}, now time.Time, resumed string) (Child, error) {
	// The request is snapshotted here (docs/spec/HOOKS.md §3 rule 5): a caller
	// that changes its history afterwards changes nothing the child sees.
	inv := &Invocation{
		Session: child, RunID: id.AscendingAt(id.Run, now), Prompt: req.Prompt, History: history,
		Runtime: rt, ToolCallID: req.ToolCallID, Mechanism: req.Mechanism, run: parent.run,
		Toolsets: parent.Toolsets, budgets: parent.budgets,
	}
	// The wrapper reads the child's record from the invocation: nothing a
	// node does changes inv.Session (the store keeps the live record).
	inv.wrap = wrapSink{parent: parent.Sink, child: inv, path: []string{child.ID}}
	inv.Sink = &inv.wrap
	// The child's own context, which Cancel cancels (made before the child
	// is registered, so that no Cancel finds it without one).
	cctx, stop := inv.h.runContext(ctx)
	if !rt.register(inv) { // a new child's id is never taken; a resumed one's may be
		stop(nil)
		<-sem
		return Child{}, fmt.Errorf("cannot continue %s: session %s runs already", child.AgentName, child.ID)
	}

	runMode := event.RunModeSync
	var task *Task
	if req.Async {
		runMode = event.RunModeAsync
		task = &Task{ID: id.Ascending(id.Task), SessionID: child.ID, Node: child.AgentName, parent: parent.Session.ID, done: make(chan struct{})}
		parent.run.tasks.add(task)
	}
	meta := make(map[string]any, len(req.Metadata)+3)
	for k, v := range req.Metadata {
		meta[k] = v
	}
	meta["prompt"] = cut(req.Prompt, 200)
	meta["max_depth"] = rt.limits.MaxDepth
	if resumed != "" {
		meta[MetaResumed] = resumed
	}
	depth := child.Depth
	start := event.SpawnSessionStart{
		ChildSessionID: child.ID, ParentSessionID: parent.Session.ID, ToolCallID: req.ToolCallID,
		SpawnMechanism: req.Mechanism, RunMode: runMode, SourceName: child.AgentName,
		SourceType: child.SourceType, Depth: depth, Description: req.Description, Metadata: meta,
		ModelID: req.Node.ModelID(),
	}
	if task != nil {
		start.TaskID = task.ID
	}
	parent.Sink.Emit(start)
	// The barrier of a one-way root sink (Invocation.Sync): what the
	// run's consumers do with the events before this start (a sink that
	// cancels the run) is done before the child runs.
	parent.Sync()
	info := StartInfo{
		ChildSessionID: child.ID, ParentSessionID: parent.Session.ID, Name: child.AgentName,
		SourceType: child.SourceType, Depth: depth, Mechanism: req.Mechanism, RunMode: runMode,
		ParentAgent: parent.Session.AgentName,
	}
	if lc := rt.cfg.Lifecycle; lc != nil {
		lc.SubagentStart(WithInvocation(ctx, parent), info)
	}
	busy := rt.busyCounter(child.AgentName)
	busy.Add(1)

	if !req.Async {
		defer releaseSlot(sem, busy) // even if runChild panics (a tool's caller recovers)
		return Child{SessionID: child.ID, Result: rt.runChild(cctx, stop, parent, inv, &req, &info, now)}, nil
	}
	parent.h.pendingAsync.Add(1)
	parent.async.Add(1)
	// Copies for the goroutine, so that only the async path moves them to
	// the heap.
	areq, ainfo := req, info
	go func() {
		defer parent.async.Done()
		var res Result
		func() {
			defer releaseSlot(sem, busy)
			res = rt.runChild(cctx, stop, parent, inv, &areq, &ainfo, now)
		}()
		parent.endTask(task, res)
	}()
	return Child{SessionID: child.ID, TaskID: task.ID}, nil
}

// endTask records an async child's result in its task and tells the
// parent's run.
func (inv *Invocation) endTask(task *Task, res Result) {
	task.mu.Lock()
	task.result = res
	task.mu.Unlock()
	close(task.done)
	// Inject before the pending count drops, so that a loop that sees no
	// pending child also sees its result in the inbox.
	inv.h.inbox.Inject(asyncResultMessage(task, res))
	inv.h.pendingAsync.Add(-1)
	// Wake a loop that waits for its pending children to end.
	inv.h.inbox.wake()
}

// releaseSlot gives back a child's concurrency slot and busy count.
func releaseSlot(sem chan struct{}, busy *atomic.Int64) {
	busy.Add(-1)
	<-sem
}

// runChild runs the child's session (runSession, under the spawn's
// timeout), rolls its totals up into the parent and always emits the end.
// ctx is the child's own context and stop cancels it (Cancel, the
// timeout); the child's Cancel waiters are told once its end is emitted.
func (rt *Runtime) runChild(ctx context.Context, stop context.CancelCauseFunc, parent, inv *Invocation, req *Request, info *StartInfo, started time.Time) Result {
	defer inv.h.finish()
	defer stop(nil)
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = rt.limits.Timeout
	}
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { stop(fmt.Errorf("%w after %s", ErrTimeout, timeout)) })
		defer t.Stop()
	}
	e := rt.runSession(ctx, req.Node, inv, started)
	parent.addChildTotals(e.usage, e.cost)
	end := event.SpawnSessionEnd{
		ChildSessionID: inv.Session.ID, ParentSessionID: parent.Session.ID, ToolCallID: req.ToolCallID,
		SourceName: inv.Session.AgentName, SourceType: inv.Session.SourceType, Depth: inv.Session.Depth,
		StopReason: e.res.StopReason, LastAssistantMessage: e.res.Output, Error: e.errText,
		Cost: e.cost, DurationMS: e.durationMS,
	}
	if !e.usage.IsZero() {
		u := e.usage
		end.Usage = &u
	}
	parent.Sink.Emit(end)
	if lc := rt.cfg.Lifecycle; lc != nil {
		lc.SubagentEnd(WithInvocation(detach.Context(ctx), parent), EndInfo{
			StartInfo: *info, StopReason: e.res.StopReason, LastAssistantMessage: e.res.Output,
			LastAssistant: lastAssistant(e.res), HasResult: e.hasResult, Usage: e.usage, DurationMS: e.durationMS,
		})
	}
	return e.res
}

// lastAssistant returns a deep copy of the content blocks of the child's
// final output: its last assistant message that carries text, else the
// output text as one text part (nodes that keep no messages, such as
// teams), else nil.
func lastAssistant(res Result) []model.Part {
	for i := len(res.Messages) - 1; i >= 0; i-- {
		if m := res.Messages[i]; m.Role == model.RoleAssistant && m.Text() != "" {
			return model.CloneParts(m.Parts)
		}
	}
	if res.Output != "" {
		return []model.Part{{Kind: model.PartText, Text: res.Output}}
	}
	return nil
}

func asyncResultMessage(t *Task, res Result) string {
	switch res.StopReason {
	case event.StopCompleted:
		return fmt.Sprintf("Background task %s (%s, session %s) completed:\n%s", t.ID, t.Node, t.SessionID, res.Output)
	default:
		msg := string(res.StopReason)
		if res.Err != nil {
			msg += ": " + res.Err.Error()
		}
		return fmt.Sprintf("Background task %s (%s, session %s) ended with %s", t.ID, t.Node, t.SessionID, msg)
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}

// wrapSink wraps a child's events for its parent's stream (invariant 5):
// an event of the child itself becomes one subagent event; a subagent event
// from a deeper descendant is forwarded with the child prepended to its
// path, never wrapped twice.
//
// Paths are shared, never copied per event: events are immutable once
// emitted (package event), so every event of the child carries the same
// one-element path, and the path of a descendant's event is extended once
// per descendant and then reused (last holds the latest extension).
type wrapSink struct {
	parent event.Sink
	child  *Invocation // the wrapped session: its record and tool call id
	path   []string    // []string{child.Session.ID}
	last   atomic.Pointer[pathExt]
}

// pathExt remembers the path made for a descendant's path.
type pathExt struct {
	from *string // &in[0] of the descendant's (shared) path
	n    int     // len of it
	out  []string
}

func (w *wrapSink) Emit(e event.Event) {
	if s, ok := e.(event.Subagent); ok {
		s.Path = w.extend(s.Path)
		w.parent.Emit(s)
		return
	}
	c := w.child
	w.parent.Emit(event.Subagent{
		SourceName: c.Session.AgentName, SourceType: c.Session.SourceType, Depth: c.Session.Depth,
		ChildSessionID: c.Session.ID, ParentSessionID: c.Session.ParentID, ToolCallID: c.ToolCallID,
		Path: w.path, Event: e,
	})
}

// extend returns the child's id followed by in, reusing the result made
// for the same in last time.
func (w *wrapSink) extend(in []string) []string {
	if len(in) == 0 {
		return w.path
	}
	if x := w.last.Load(); x != nil && x.from == &in[0] && x.n == len(in) {
		return x.out
	}
	out := make([]string, len(in)+1)
	out[0] = w.child.Session.ID
	copy(out[1:], in)
	w.last.Store(&pathExt{from: &in[0], n: len(in), out: out})
	return out
}
