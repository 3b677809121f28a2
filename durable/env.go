package durable

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/durablewire"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// Activity options of the workflow's steps.
//
// Every step that writes to the session's log waits for its activity to
// end when the workflow is cancelled (WaitForCancellation): without it the
// step's future fails at once, the workflow writes the session's end, and
// the activity, which learns of the cancel only at its next heartbeat,
// writes its events after that end (a cancelled child's text deltas after
// its run_error, in the store and in the follower's stream). A cancelled
// activity that ends anyway (its model call finished first) is a step
// that completed: its events come before the end, and count.
var (
	// A model turn: retried twice at most (a completed one is never
	// called again, see the package doc); a dead worker is noticed within
	// the heartbeat timeout.
	turnOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute, HeartbeatTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3, NonRetryableErrorTypes: []string{errTooLarge}},
		WaitForCancellation: true,
	}
	// A model turn as a local activity (SessionInput.TurnLocal): as
	// turnOptions, without heartbeats (the SDK keeps the workflow task
	// alive while it runs).
	turnLocalOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: turnOptions.StartToCloseTimeout,
		RetryPolicy:         turnOptions.RetryPolicy,
	}
	// A tool call runs once: a tool may not be idempotent (a shell
	// command); a failure is the call's error result, for the model.
	toolOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute, HeartbeatTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		WaitForCancellation: true,
	}
	// Store writes are idempotent (see Pending): retried.
	storeOptions = workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumAttempts: 20},
		WaitForCancellation: true,
	}
	// A child's creation (Spawn) and a session's end are local
	// activities, retried as store writes; past the workflow task's
	// timeout the SDK goes on with them in the next task.
	localStoreOptions = workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: 2 * time.Minute, StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumAttempts: 20},
	}
)

// signalGrace is the timer after a final answer that lets the signals
// taken while the turn ran reach the workflow (Turn), in the histories of
// the builds before SessionInput.SignalYield.
const signalGrace = time.Millisecond

// yield lets every other coroutine of the workflow that can run do so
// before the caller goes on, in the same workflow task: one pass of the
// SDK's dispatcher, without a history event.
func yield(wc workflow.Context) {
	yielded := false
	// Disconnected: a cancel of the caller's context does not cut it short.
	dc, _ := workflow.NewDisconnectedContext(wc)
	_ = workflow.Await(dc, func() bool {
		ok := yielded
		yielded = true
		return ok
	})
}

// wfEnv is the spawn.Env of a session's workflow.
type wfEnv struct {
	root workflow.Context
	j    *journal
	// ids makes the workflow's ids, from a ChaCha8 stream seeded with
	// seed (the session, its run, its workflow run).
	ids    *id.Generator
	seed   string
	cancel context.CancelCauseFunc
	queue  string // the task queue of child workflows
	// writing is set while a branch (Parallel) writes the journal: the
	// session's log is appended in one order, each write from the length
	// the last one left.
	writing bool
	// children counts the session's running children (max_children);
	// window bounds them too (Engine.MaxInFlight).
	children, window int
	// budget is where the run's spawn budget is kept (budget.go).
	budget BudgetRef
	// lifecycle and sessions say that the pool has subagent hooks and
	// session hooks (the same on every worker: the pool's configuration).
	lifecycle, sessions bool
	// conversation is the id of the tree's root session.
	conversation string
	// approvals, when set, are waited for by the workflow (approvals.go).
	approvals *Approvals
	waiting   *approvalWaits
	// kids are the session's children in this run, by session id, for
	// the parent tools that steer them (steer.go).
	kids map[string]*wfChild
	// signals, when set, takes the signals that have come (messages,
	// cancels of children) before the caller decides on a step's end.
	signals func()
	// mover, when set, lets the session's workflow continue as new
	// (carry.go): a parallel team's.
	mover *mover
	// bounded: Parallel keeps at most window branches alive, and a spawn
	// of a cancelled run does not start (parallel.go).
	bounded bool
	// batched: the branches' creations are made in batches (creations).
	batched   bool
	creations creations
	// waitLocal: a cancel waits for the local activity that creates
	// children (SessionInput.WaitLocal).
	waitLocal bool
	// signalYield: a final answer yields to the signal coroutines
	// rather than waiting on a timer (SessionInput.SignalYield).
	signalYield bool
	// turnLocal: model turns are local activities
	// (SessionInput.TurnLocal).
	turnLocal bool
	// childNames: a child's ids come from childNames, by its place
	// among the run's spawns (SessionInput.ChildNames); spawned counts
	// them, turnAt is when the last model turn was asked.
	childNames bool
	spawned    int
	turnAt     time.Time
	// idClock, when set, is the time every id of the workflow is made
	// at (a team's that may continue as new; the id generator keeps them
	// strictly ascending): its ids then depend on the order they are
	// made, never on the time of the workflow task that makes them, so a
	// task that a dead worker began and another worker does again makes
	// the same ids, and a member's session the dead worker's local
	// activity created is the one the task done again creates.
	idClock time.Time
}

// idTime is the time of the ids made at workflow time now (idClock).
func (e *wfEnv) idTime(now time.Time) time.Time {
	if !e.idClock.IsZero() {
		return e.idClock
	}
	return now
}

// takeSignals runs e.signals when it is set.
func (e *wfEnv) takeSignals() {
	if e.signals != nil {
		e.signals()
	}
}

// maxPending bounds the events one activity's input carries to the store
// (Temporal refuses a payload over 2 MB): what is pending beyond it is
// written first, in parts (spill). A parallel team's members' ends pile
// up between two of its writes.
const maxPending = 512 << 10

// spill writes what is pending, in parts of at most maxPending bytes, until
// what is left is under the bound. Under the session's write lock when
// branches may write (Parallel).
func (e *wfEnv) spill(wc workflow.Context) error {
	for e.j.pendingBytes() > maxPending {
		p := e.j.takeUpTo(maxPending)
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(wc, storeOptions), actWrite, p).Get(wc, nil); err != nil {
			e.failed(wc, p)
			return err
		}
		e.j.written(p, 0)
	}
	return nil
}

// locked runs fn as the session's only writer of its log.
func (e *wfEnv) locked(wc workflow.Context, fn func()) {
	_ = workflow.Await(wc, func() bool { return !e.writing })
	e.writing = true
	defer func() { e.writing = false }()
	fn()
}

// inBranch reports whether ctx is one of several concurrent branches.
func inBranch(ctx context.Context) bool {
	_, ok := ctx.Value(branchKey{}).(workflow.Context)
	return ok
}

var (
	_ spawn.Env               = (*wfEnv)(nil)
	_ durablewire.HookEnv     = (*wfEnv)(nil)
	_ durablewire.ToolsetEnv  = (*wfEnv)(nil)
	_ durablewire.ApprovalEnv = (*wfEnv)(nil)
)

func newEnv(wctx workflow.Context, j *journal, cancel context.CancelCauseFunc, queue string) *wfEnv {
	seed := "agentpool/" + j.sid
	return &wfEnv{root: wctx, j: j, seed: seed, ids: id.NewSeeded(sha256.Sum256([]byte(seed))), cancel: cancel, queue: queue}
}

// branchKey carries the workflow.Context of one branch of Parallel to the
// Env's methods. The agent loop and the team, which call them, are the
// same code in and out of a workflow and pass only a context.Context; a
// workflow.Context is Temporal's and exists only inside one, so it rides
// in the context they already pass. It selects no behaviour: without it
// the Env uses the workflow's root context.
type branchKey struct{}

// wctx is the workflow context of ctx's branch (Parallel).
func (e *wfEnv) wctx(ctx context.Context) workflow.Context {
	if c, ok := ctx.Value(branchKey{}).(workflow.Context); ok {
		return c
	}
	return e.root
}

// failed handles an activity's failure: what it carried is pending again,
// and a cancellation of the workflow cancels the run's ctx now (the loop
// then sees it as it sees a cancelled ctx in this process).
func (e *wfEnv) failed(wc workflow.Context, p Pending) {
	e.j.failed(p)
	if wc.Err() != nil {
		e.cancel(context.Canceled)
	}
}

// Turn implements spawn.Env: the Turn activity.
func (e *wfEnv) Turn(ctx context.Context, inv *spawn.Invocation, name string, req *model.Request) (spawn.Turn, error) {
	wc := e.wctx(ctx)
	in := TurnInput{Agent: name, Request: *req, MessageID: e.NewID(ctx, id.Message), CreatedAt: workflow.Now(wc),
		Conversation: e.conversation}
	e.turnAt = in.CreatedAt
	if err := e.spill(wc); err != nil {
		return spawn.Turn{}, err
	}
	in.Pending = e.j.take()
	var out TurnOutput
	var err error
	if e.turnLocal {
		in.RunID = inv.RunID
		err = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(wc, turnLocalOptions), actTurn, in).Get(wc, &out)
	} else {
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(wc, turnOptions), actTurn, in).Get(wc, &out)
	}
	if err != nil {
		e.failed(wc, in.Pending)
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) && ae.Type() == errTooLarge {
			return spawn.Turn{}, fmt.Errorf("%w: %s", agent.ErrResponseTooLarge, ae.Message())
		}
		return spawn.Turn{}, err
	}
	e.j.written(in.Pending, out.Events)
	if len(out.Turn.Message.ToolCalls()) == 0 {
		// A final answer: a message that came with the turn's end (in the
		// same workflow task) was handed by the SDK to the coroutine that
		// receives messages, which runs after this one: takeSignals
		// alone would not see it, and the session would end without
		// reading it. Yield once so that it runs first (no history
		// events); the histories of the builds before it have a 1 ms
		// timer instead (SessionInput.SignalYield).
		if e.signalYield {
			yield(wc)
		} else {
			_ = workflow.Sleep(wc, signalGrace)
		}
	}
	e.takeSignals() // a message that came during the turn is read next
	return out.Turn, nil
}

// Tool implements spawn.Env: the Tool activity.
func (e *wfEnv) Tool(ctx context.Context, inv *spawn.Invocation, name string, call tool.Call) tool.Result {
	wc := e.wctx(ctx)
	in := ToolInput{Agent: name, Call: call, Conversation: e.conversation}
	if inBranch(ctx) {
		// Other branches write too: what is pending is written in turn,
		// and the call carries nothing.
		var err error
		e.locked(wc, func() { err = e.write(wc) })
		if err != nil {
			return tool.Errorf("tool %s: store: %v", call.Name, err)
		}
		in.Pending = Pending{SessionID: e.j.sid, AfterSeq: e.j.seq}
	} else {
		if err := e.spill(wc); err != nil {
			return tool.Errorf("tool %s: store: %v", call.Name, err)
		}
		in.Pending = e.j.take()
	}
	var out ToolOutput
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(wc, toolOptions), actTool, in).Get(wc, &out); err != nil {
		e.failed(wc, in.Pending)
		if wc.Err() != nil {
			return tool.Errorf("tool %s cancelled", call.Name)
		}
		return tool.Errorf("tool %s failed: %v", call.Name, err)
	}
	e.j.written(in.Pending, 0)
	return out.Result
}

// listOptions: listing a toolset's tools is idempotent (retried); an
// MCP server may take a while to start.
var listOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute, HeartbeatTimeout: 10 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
}

// ListToolsets implements durablewire.ToolsetEnv: the Toolsets activity, on a
// worker, where the pool's toolsets run (their calls are Tool activities).
func (e *wfEnv) ListToolsets(ctx context.Context, inv *spawn.Invocation, name string) ([]agent.ToolsetList, error) {
	wc := e.wctx(ctx)
	var out []agent.ToolsetList
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(wc, listOptions), actToolsets, name).Get(wc, &out); err != nil {
		return nil, fmt.Errorf("list the toolsets on a worker: %w", err)
	}
	return out, nil
}

// write writes what is pending (before a step whose events must follow it
// in the log, and at the end).
func (e *wfEnv) write(wc workflow.Context) error {
	if !e.j.pending() {
		return nil
	}
	if err := e.spill(wc); err != nil {
		return err
	}
	p := e.j.take()
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(wc, storeOptions), actWrite, p).Get(wc, nil); err != nil {
		e.failed(wc, p)
		return err
	}
	e.j.written(p, 0)
	return nil
}

// Spawn implements spawn.Env: it waits for a slot among the session's
// running children (max_children, and Engine.MaxInFlight); the child session is created by an
// activity, which also writes its spawn_session_start; the child runs as a
// child workflow whose id is its session id, under the spawn's timeout;
// its end is written with the parent's next step. An async child runs in
// a workflow coroutine of its own: the call returns its task at once, and
// its end is delivered to the session's inbox (spawn.Children.EndTask),
// as in this process.
func (e *wfEnv) Spawn(ctx context.Context, parent *spawn.Invocation, req spawn.Request, kids spawn.Children) (spawn.Child, error) {
	wc := e.wctx(ctx)
	m := e.mover
	member := -1 // the member's index, when the session may continue as new
	if m != nil {
		m.addTotals(kids)
		if k, ok := m.member(ctx); ok {
			if c, ok := m.carried(k); ok {
				return m.answer(wc, c)
			}
			member = k
		}
	}
	limits := parent.Runtime.Limits()
	slots := limits.MaxChildren
	if e.window > 0 {
		slots = min(slots, e.window)
	}
	if e.children >= slots || m.holds() || (e.bounded && ctx.Err() != nil) {
		if m != nil {
			m.blocked++
		}
		err := workflow.Await(wc, func() bool { return (e.children < slots && !m.holds()) || ctx.Err() != nil })
		if m != nil {
			m.blocked--
		}
		if err != nil || ctx.Err() != nil {
			cause := context.Cause(ctx)
			if cause == nil {
				cause = context.Canceled // the workflow's, not yet the run's
			}
			return spawn.Child{}, fmt.Errorf("cannot spawn %s: %w", req.Node.Name(), cause)
		}
	}
	e.children++
	now := workflow.Now(wc)
	depth := parent.Session.Depth + 1
	title := req.Description
	if title == "" {
		title = req.Node.Name()
	}
	ids, at := e.ids, e.idTime(now)
	switch {
	case member >= 0 && m.named:
		ids, at = m.names(member)
	case e.childNames:
		ids, at = childNames(e, wc)
	}
	child := session.Session{
		ID: ids.DescendingAt(id.Session, at), ParentID: parent.Session.ID, Depth: depth,
		AgentName: req.Node.Name(), SourceType: req.Node.SourceType(),
		Title:  title + " (@" + req.Node.Name() + " subagent)",
		Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now,
		Metadata: map[string]any{session.MetaEngine: EngineName},
	}
	meta := make(map[string]any, len(req.Metadata)+2)
	for k, v := range req.Metadata {
		meta[k] = v
	}
	meta["prompt"] = cutText(req.Prompt, 200)
	meta["max_depth"] = limits.MaxDepth
	start := event.SpawnSessionStart{
		ChildSessionID: child.ID, ParentSessionID: parent.Session.ID, ToolCallID: req.ToolCallID,
		SpawnMechanism: req.Mechanism, RunMode: event.RunModeSync, SourceName: child.AgentName,
		SourceType: child.SourceType, Depth: depth, Description: req.Description, Metadata: meta,
		ModelID: req.Node.ModelID(),
	}
	if req.Async {
		start.RunMode, start.TaskID = event.RunModeAsync, ids.AscendingAt(id.Task, at)
	}
	// The start is written by the activity that creates the child, after
	// it: a follower that reads it finds the child.
	var err error
	if e.batched {
		err = e.creations.create(e, wc, child, start)
	} else {
		err = createBatch(e, wc, []*creation{{session: child, start: encode(start)}})
	}
	if err != nil {
		e.children--
		err = fmt.Errorf("cannot spawn %s: %w", req.Node.Name(), err)
		if member >= 0 {
			m.set(member, CarriedMember{E: cutText(err.Error(), 1024)})
		}
		return spawn.Child{}, err
	}
	if member >= 0 {
		m.begun++
		m.set(member, CarriedMember{I: child.ID}) // its end follows, in this run
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = limits.Timeout
	}
	in := SessionInput{Session: child, RunID: ids.AscendingAt(id.Run, at), Prompt: req.Prompt,
		History: model.CloneMessages(req.History), ToolCallID: req.ToolCallID, Timeout: timeout,
		Budget: e.budget, Conversation: e.conversation, Mechanism: req.Mechanism, Approvals: e.approvals, EndLocal: true, WaitLocal: true, SignalYield: true, ChildNames: true,
		TurnLocal: e.mover != nil}
	info := spawn.StartInfo{
		ChildSessionID: child.ID, ParentSessionID: parent.Session.ID, Name: child.AgentName,
		SourceType: child.SourceType, Depth: depth, Mechanism: req.Mechanism, RunMode: start.RunMode,
		ParentAgent: parent.Session.AgentName,
	}
	if e.lifecycle {
		// subagent/start, before the child runs: what it injects into the
		// child is in the child's first model request.
		if out, err := e.hook(ctx, HookInput{Point: hookSubagentStart, Session: parent.Session, RunID: parent.RunID, Child: &child}, info); err == nil {
			in.Inject = out.ChildInjected
			for _, c := range out.Injected {
				parent.Inject(c)
			}
			if len(out.Events) > 0 {
				// Before the child's first events, as in this process.
				e.locked(wc, func() { _ = e.write(wc) })
			}
		}
	}
	if !req.Async {
		res := e.runChild(wc, parent, kids, &req, in, &info)
		if member >= 0 {
			m.ended(member, child.ID, res)
		}
		return spawn.Child{SessionID: child.ID, Result: res}, nil
	}
	task := kids.StartTask(start.TaskID, child.ID, child.AgentName)
	workflow.Go(wc, func(c workflow.Context) {
		res := e.runChild(c, parent, kids, &req, in, &info)
		if member >= 0 {
			m.ended(member, child.ID, res)
		}
		kids.EndTask(task, res)
	})
	return spawn.Child{SessionID: child.ID, TaskID: task.ID}, nil
}

// childNames returns the generator of the next child's ids and the time
// they are made at: seeded with the workflow's seed and the child's place
// among the spawns of the workflow's run, at the time the session's last
// model turn was asked (the workflow's start before one). A workflow task
// that a dead worker began, whose Create had stored the child, and that
// another worker does again, names the child alike: the task done again
// starts that session instead of leaving it running beside another
// (workflow.Now, which the ids were made at before, is the time of the
// task).
func childNames(e *wfEnv, wc workflow.Context) (*id.Generator, time.Time) {
	k := e.spawned
	e.spawned++
	at := e.turnAt
	if at.IsZero() {
		at = workflow.GetInfo(wc).WorkflowStartTime
	}
	seed := sha256.Sum256([]byte(e.seed + "/child/" + strconv.Itoa(k)))
	return id.NewSeededFrom(seed, at, 3*k), at
}

// creation is a child session to create and its spawn_session_start.
type creation struct {
	session session.Session
	start   json.RawMessage
	done    bool
	err     error
}

// createBatch creates the sessions of batch and writes what e has pending
// with their starts after it, in one Create local activity, as the
// session's only writer of its log. A local activity: run by this worker
// at once, recorded as one marker, without a round trip through the
// server's task queue (what a member of a large team mostly cost). A
// worker that dies before the marker is recorded leaves it to run again
// from attempt 1 elsewhere: the write always looks at the log first.
func createBatch(e *wfEnv, wc workflow.Context, batch []*creation) error {
	var err error
	e.locked(wc, func() {
		if err = e.spill(wc); err != nil {
			return
		}
		pending := e.j.take()
		n := len(pending.Events)
		in := CreateInput{Session: batch[0].session, Since: pending.AfterSeq}
		if e.mover != nil {
			in.Since = e.mover.first
		}
		for i, c := range batch {
			pending.Events = append(pending.Events, c.start)
			if i > 0 {
				in.More = append(in.More, c.session)
			}
		}
		pending.Check = true
		in.Pending = pending
		lc, wait := workflow.WithLocalActivityOptions(wc, localStoreOptions), wc
		if wc.Err() == nil && e.waitLocal {
			// A cancel that comes while the creation runs waits for it: a
			// local activity cancelled is let go at once while its code
			// goes on, and would write the child and its start after the
			// session's end. The child, then created, is started and
			// cancelled with its parent (runChild).
			wait, _ = workflow.NewDisconnectedContext(wc)
			lc = workflow.WithLocalActivityOptions(wait, localStoreOptions)
		}
		if err = workflow.ExecuteLocalActivity(lc, actCreate, in).Get(wait, nil); err != nil {
			// Nothing may have been emitted: the starts go with the failure.
			pending.Events = pending.Events[:n]
			e.failed(wc, pending)
			return
		}
		e.j.written(pending, 0)
	})
	return err
}

// versionBatchedCreates is the workflow change after which the members of
// a parallel team that reach Spawn while another creation runs are
// created together by the next one: one local activity for all of them
// (creations.create). A local activity's result costs a pass of the SDK's
// dispatcher over every live coroutine of the team (the window's
// members), and each creation used to wait for the one before it under
// the write lock, a pass each. Histories made before it replay as made.
const versionBatchedCreates = "agentpool.batched-creates"

// versionMemberNames is the version of versionBatchedCreates from which
// a parallel team's members are named by their index (mover.names): one
// marker per run of the team's workflow for both changes.
const versionMemberNames = 2

// creations are a session's child creations made in batches: queued are
// those waiting for the next batch, creating is set while one runs.
// Workflow state, like wfEnv's.
type creations struct {
	queued   []*creation
	creating bool
}

// create queues the creation of child and waits until a batch has
// created it: the first branch to find no creation running leads the
// next batch, of every creation queued once the dispatcher has run every
// branch it could (those that reach Spawn in the same workflow task
// join). A batch's failure is each of its members'.
func (q *creations) create(e *wfEnv, wc workflow.Context, child session.Session, start event.SpawnSessionStart) error {
	c := &creation{session: child, start: encode(start)}
	q.queued = append(q.queued, c)
	// Disconnected: a cancelled branch still waits for the batch that
	// has taken its creation (its activity ends one way or the other).
	dc, _ := workflow.NewDisconnectedContext(wc)
	for !c.done {
		if q.creating {
			_ = workflow.Await(dc, func() bool { return c.done || !q.creating })
			continue
		}
		q.creating = true
		// One yield, to a later pass of the dispatcher: the branches it
		// runs meanwhile queue their creations behind this one.
		yield(dc)
		batch := q.queued
		q.queued = nil
		err := createBatch(e, wc, batch)
		for _, b := range batch {
			b.done, b.err = true, err
		}
		q.creating = false
	}
	return c.err
}

// runChild runs the child workflow of in, rolls its totals up into the
// parent, emits its spawn_session_end and gives its slot back.
func (e *wfEnv) runChild(wc workflow.Context, parent *spawn.Invocation, kids spawn.Children, req *spawn.Request, in SessionInput, info *spawn.StartInfo) spawn.Result {
	defer func() { e.children-- }()
	child := in.Session
	opts := workflow.ChildWorkflowOptions{
		WorkflowID: child.ID, TaskQueue: e.queue,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation: true, // its end (aborted) is written before the parent's spawn_session_end
	}
	// A child whose session was created after its parent was cancelled
	// (the creation, or the subagent/start hook, was under way) is
	// started all the same, then cancelled: its workflow ends its session.
	// A workflow started in a cancelled context is never started.
	start, late := wc, wc.Err() != nil && e.waitLocal
	if late {
		start, _ = workflow.NewDisconnectedContext(wc)
	}
	// The child's own cancel (task_stop, StopChild) cancels its workflow
	// alone.
	cwc, cancelChild := workflow.WithCancel(workflow.WithChildOptions(start, opts))
	defer cancelChild()
	kid := e.child(child, cancelChild)
	var out SessionOutput
	res := spawn.Result{}
	kid.future = workflow.ExecuteChildWorkflow(cwc, WorkflowName, in)
	if late {
		_ = kid.future.GetChildWorkflowExecution().Get(start, nil)
		cancelChild()
	}
	err := kid.future.Get(wc, &out)
	if err == nil && out.End != nil {
		// Its end, written with this session's next write, before the
		// spawn_session_end emitted below (Pending.Ends).
		p := *out.End
		out.End = nil
		e.j.endChild(EndInput{Pending: p, Output: out, RunID: in.RunID, CloseStrays: out.StopReason != event.StopCompleted})
	}
	e.takeSignals() // who cancelled it, when a person did
	if err != nil {
		res.StopReason, res.Err = event.StopError, err
		if wc.Err() != nil || temporal.IsCanceledError(err) {
			res.StopReason = event.StopAborted
		}
		out.Error = err.Error()
	} else {
		res = out.Result()
	}
	if res.StopReason == event.StopAborted && wc.Err() == nil {
		// The child alone was cancelled (CancelSession: a person at a
		// front end), not its parent: the parent goes on and its tool
		// result says so, as in this process (spawn.CancelledError).
		cause := kid.cause // its parent's task_stop, else a person's cancel
		if cause == nil {
			cause = &spawn.CancelledError{SessionID: child.ID}
		}
		res.Err = cause
		out.Error = res.Err.Error()
	}
	kid.end(res.StopReason)
	kids.AddTotals(out.TotalUsage, out.TotalCost)
	end := event.SpawnSessionEnd{
		ChildSessionID: child.ID, ParentSessionID: parent.Session.ID, ToolCallID: req.ToolCallID,
		SourceName: child.AgentName, SourceType: child.SourceType, Depth: child.Depth,
		StopReason: res.StopReason, LastAssistantMessage: res.Output, Error: out.Error,
		Cost: out.TotalCost, DurationMS: out.DurationMS,
	}
	if !out.TotalUsage.IsZero() {
		u := out.TotalUsage
		end.Usage = &u
	}
	parent.Sink.Emit(end)
	if e.lifecycle {
		_, _ = e.hook(context.WithValue(context.Background(), branchKey{}, wc), HookInput{Point: hookSubagentEnd, Session: parent.Session, RunID: parent.RunID}, spawn.EndInfo{
			StartInfo: *info, StopReason: res.StopReason, LastAssistantMessage: res.Output,
			LastAssistant: spawn.LastAssistant(res), HasResult: err == nil, Usage: out.TotalUsage, DurationMS: out.DurationMS,
		})
	}
	return res
}

// Await implements spawn.Env: workflow.Await, on after a cancellation of
// the workflow (cond says when to stop).
func (e *wfEnv) Await(ctx context.Context, cond func() bool) {
	wc := e.wctx(ctx)
	e.takeSignals() // cond reads the inbox
	for !cond() {
		if err := workflow.Await(wc, cond); err != nil {
			wc, _ = workflow.NewDisconnectedContext(wc)
		}
	}
}

// Now implements spawn.Env: the workflow's clock.
func (e *wfEnv) Now(ctx context.Context) time.Time { return workflow.Now(e.wctx(ctx)) }

// NewID implements spawn.Env: ids from the session's seeded generator.
func (e *wfEnv) NewID(ctx context.Context, prefix string) string {
	return e.ids.AscendingAt(prefix, e.idTime(workflow.Now(e.wctx(ctx))))
}

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}
