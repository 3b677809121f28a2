package durable

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/durablewire"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tracing"
)

// Engine is what a worker runs: the session workflow over a pool's nodes,
// and the activities over the pool's models, tools and store.
type Engine struct {
	Activities
	// Names lists the pool's nodes; Limits bound delegation.
	Names  func() []string
	Limits spawn.Limits
	// TaskQueue is where child workflows are started (the pool's queue).
	TaskQueue string
	// MaxInFlight bounds the child workflows a session has running at
	// once, whatever max_children allows: further spawns wait for a slot
	// (a 10,000-member team starts its members in a sliding window).
	// Temporal refuses a workflow more than 2,000 pending children.
	// Default DefaultMaxInFlight; it must be the same on every worker
	// (a replay must take the same decisions).
	MaxInFlight int
	// ContinueAfterEvents and ContinueAfterBytes are the history (events,
	// bytes) past which a parallel team's workflow drains its running
	// members and continues as new (carry.go). Defaults
	// DefaultContinueAfterEvents and DefaultContinueAfterBytes; the same
	// on every worker.
	ContinueAfterEvents, ContinueAfterBytes int
}

// DefaultMaxInFlight is Engine.MaxInFlight's default: well under
// Temporal's 2,000 pending child workflows per workflow.
const DefaultMaxInFlight = 500

// Registry is where Register registers: a worker.Worker, or a
// testsuite.TestWorkflowEnvironment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register registers the workflow and the activities on a worker.
func (e *Engine) Register(w Registry) {
	_, e.onWorker = w.(worker.Worker)
	w.RegisterWorkflowWithOptions(e.Session, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(&e.Activities, activityOptions())
}

func activityOptions() activity.RegisterOptions {
	return activity.RegisterOptions{Name: activityPrefix}
}

// Session is the workflow of one session: it runs the session's node with
// the workflow's spawn.Env, ends the session's run as a run in this process
// does (stop reason settled, final record written) and returns its end.
func (e *Engine) Session(wctx workflow.Context, in SessionInput) (SessionOutput, error) {
	started := workflow.Now(wctx)
	if in.Carry != nil {
		started = in.Carry.Started
	}
	// A run that continues as new cancels nothing on its way out: the
	// members that wait to start must not start after it decided
	// (carry.go).
	continuing := false
	// Spans are not made by workflow code, which replays (see
	// nameSessionSpan): the decorators of a traced pool stand aside.
	ctx, cancel := context.WithCancelCause(tracing.WithoutSpans(context.Background()))
	defer func() {
		if !continuing {
			cancel(nil)
		}
	}()
	// A cancellation of the workflow (the root's, or its parent's close)
	// is a cancellation of the run's ctx.
	workflow.Go(wctx, func(c workflow.Context) {
		c.Done().Receive(c, nil)
		cancel(context.Canceled)
	})
	// The spawn's timeout cancels the run with spawn.ErrTimeout as its
	// cause (first: the cancellation of its steps that follows does not
	// change it), then its activities and children, as a timed-out child
	// is cancelled in this process.
	wctx, stopSteps := workflow.WithCancel(wctx)
	defer func() {
		if !continuing {
			stopSteps()
		}
	}()
	if in.Timeout > 0 {
		tc, stopTimer := workflow.WithCancel(wctx)
		defer func() {
			if !continuing {
				stopTimer()
			}
		}()
		// What is left of it: a run continued as new goes on with it.
		left := max(in.Timeout-workflow.Now(wctx).Sub(started), time.Millisecond)
		workflow.Go(tc, func(c workflow.Context) {
			if workflow.NewTimer(c, left).Get(c, nil) == nil {
				cancel(fmt.Errorf("%w after %s", spawn.ErrTimeout, in.Timeout))
				stopSteps()
			}
		})
	}
	j := &journal{sid: in.Session.ID, seq: in.AfterSeq}
	env := newEnv(wctx, j, cancel, e.TaskQueue)
	env.window = e.MaxInFlight
	if env.window <= 0 {
		env.window = DefaultMaxInFlight
	}
	env.waitLocal = in.WaitLocal
	env.signalYield = in.SignalYield
	env.turnLocal = in.TurnLocal
	if in.TurnLocal {
		// A workflow task lost with its worker is done again elsewhere,
		// with the turns in it: the same ids (not the clock's), so that a
		// turn finds what the lost task's stored (Activities.Turn).
		env.idClock = workflow.GetInfo(wctx).WorkflowStartTime
	}
	env.childNames = in.ChildNames
	env.budget = in.Budget
	if env.budget.SessionID == "" {
		// The run's first session: the run's spawn budget is kept on its
		// record, counted per run as in this process.
		env.budget = BudgetRef{SessionID: in.Session.ID, RunID: in.RunID}
	}
	if in.AfterSeq > 0 || len(in.History) > 0 {
		// A continued session's run makes ids of its own: the seed of its
		// first run would make that run's ids (children, messages) again.
		env.seed = "agentpool/" + in.Session.ID + "/" + in.RunID
		env.ids = id.NewSeeded(sha256.Sum256([]byte(env.seed)))
	}
	if in.Carry != nil {
		// A run continued as new: ids of its own, and what its team's
		// code emits again from its start is dropped (carry.go).
		env.seed = "agentpool/" + in.Session.ID + "/" + in.RunID + "/" + strconv.Itoa(in.Carry.Runs)
		env.ids = id.NewSeeded(sha256.Sum256([]byte(env.seed)))
		j.skipStarted, j.skipRefused = true, in.Carry.Refused
	}
	if e.Runtime != nil {
		lc := e.Runtime.Lifecycle()
		_, env.sessions = lc.(sessionHooks)
		env.lifecycle = lc != nil
	}
	if in.Approvals != nil {
		// An ask comes back to the workflow, which waits for the answer
		// (approvals.go), from the hooks called here (quiet points) as
		// from those of the Hook activity (HookInput.DeferApprovals).
		env.approvals = in.Approvals
		ctx = durablewire.DeferApprovals(ctx)
	}
	root := in.Session.ParentID == ""
	env.conversation = in.Conversation
	if root {
		env.conversation = in.Session.ID
	}
	rt := spawn.NewRuntime(spawn.Config{Store: journalStore{j: j}, Limits: e.Limits, Lookup: e.Lookup, Names: e.Names})
	inv := spawn.NewEnvInvocation(rt, env, in.Session, in.RunID, in.Prompt, in.ToolCallID, in.History, j)

	for _, c := range in.Inject {
		inv.Inject(c)
	}
	// A person's message to this session (MessageSession) is read at its
	// next model request, as in this process.
	messages := workflow.GetSignalChannel(wctx, SignalMessage)
	deliver := func(m MessageSignal) {
		if !inv.Deliver(spawn.Sender{By: m.By, Agent: m.Agent, Session: m.Session}, m.Text) {
			workflow.GetLogger(wctx).Warn("message to the session dropped (ended, empty or too large)", "session", in.Session.ID)
		}
	}
	workflow.Go(wctx, func(c workflow.Context) {
		for {
			var m MessageSignal
			if !messages.Receive(c, &m) {
				return
			}
			deliver(m)
		}
	})
	// Who cancels a child (CancelSession) is told before its cancel.
	cancels := workflow.GetSignalChannel(wctx, SignalChildCancelled)
	workflow.Go(wctx, func(c workflow.Context) {
		for {
			var m ChildCancelledSignal
			if !cancels.Receive(c, &m) {
				return
			}
			env.cancelledBy(m.Session, m.By)
		}
	})
	// The coroutines above run after the one that waits on a step, when
	// the signal and the step's end come in the same workflow task: the
	// Env takes what has come (signals) before it decides on a step's end.
	env.signals = func() {
		for {
			var m MessageSignal
			if !messages.ReceiveAsync(&m) {
				break
			}
			deliver(m)
		}
		for {
			var m ChildCancelledSignal
			if !cancels.ReceiveAsync(&m) {
				break
			}
			env.cancelledBy(m.Session, m.By)
		}
	}
	runSessionHooks := root && env.sessions && !in.SubmitterHooks
	if runSessionHooks && in.Carry == nil {
		source := "startup"
		if in.AfterSeq > 0 {
			source = "resume"
		}
		if out, err := env.hook(ctx, HookInput{Point: hookSessionStart, Session: in.Session, RunID: in.RunID, Prompt: in.Prompt}, sessionPayload{Source: source}); err == nil {
			for _, c := range append(out.ChildInjected, out.Injected...) {
				inv.Inject(c)
			}
		}
	}
	var res spawn.Result
	node, ok := e.Lookup(in.Session.AgentName)
	switch {
	case ok && mayContinue(wctx, node):
		env.mover = newMover(env, in, cmp.Or(e.ContinueAfterEvents, DefaultContinueAfterEvents),
			cmp.Or(e.ContinueAfterBytes, DefaultContinueAfterBytes), started)
		env.idClock = workflow.GetInfo(wctx).WorkflowStartTime
		if next := runContinuing(wctx, ctx, env, node, inv, in, &res); next != nil {
			continuing = true
			return SessionOutput{}, workflow.NewContinueAsNewError(wctx, WorkflowName, *next)
		}
	case ok:
		res = runNode(ctx, node, inv)
	default:
		res = spawn.Result{StopReason: event.StopError, Err: fmt.Errorf("%w: %s", spawn.ErrUnknownNode, in.Session.AgentName)}
		j.Emit(event.RunError{Message: res.Err.Error(), Code: "unknown_node", RunID: in.RunID, AgentName: in.Session.AgentName})
	}
	// A node that is no agent may leave async children running: they end
	// before the session does, as in this process (spawn.Runtime.Release);
	// what they injected too late for a model request is stored with the
	// conversation.
	inv.AwaitAsync(ctx)
	if left := inv.Injected(); len(left) > 0 {
		storeUndelivered(ctx, env, j, left)
	}
	spawn.Settle(ctx, &res)
	if ok {
		nameSessionSpan(wctx, node, in, res)
	}
	childUsage, childCost := inv.ChildTotals()
	// The output goes through Temporal (the End activity's input, the
	// workflow's result): bounded.
	out := SessionOutput{Output: boundText(res.Output), StopReason: res.StopReason, Usage: res.Usage, Cost: res.Cost,
		TotalUsage: res.Usage, TotalCost: res.Cost + childCost, Messages: res.Messages,
		DurationMS: workflow.Now(wctx).Sub(started).Milliseconds()}
	out.TotalUsage.Add(childUsage)
	if res.Err != nil {
		out.Error = res.Err.Error()
	}
	// The end is written even when the workflow was cancelled, and a
	// cancel that comes while it is written waits for it (WaitLocal).
	ec := wctx
	if wctx.Err() != nil || in.WaitLocal {
		ec, _ = workflow.NewDisconnectedContext(wctx)
	}
	if err := env.spill(ec); err != nil {
		return out, fmt.Errorf("store the events of session %s: %w", in.Session.ID, err)
	}
	p := j.take()
	if in.TurnLocal && wctx.Err() == nil {
		// Its parent writes it, once this workflow has completed
		// (SessionInput.TurnLocal).
		out.End = &p
		return out, nil
	}
	if err := storeEnd(ec, in.EndLocal, EndInput{Pending: p, Output: out, RunID: in.RunID,
		CloseStrays: out.StopReason != event.StopCompleted}); err != nil {
		return out, fmt.Errorf("store the end of session %s: %w", in.Session.ID, err)
	}
	if runSessionHooks {
		// After the session's end, as in this process; what its hooks
		// emit is recorded only (hook.Registry.SessionEnd), so nothing is left
		// to write.
		_, _ = env.hook(ctx, HookInput{Point: hookSessionEnd, Session: in.Session, RunID: in.RunID}, sessionPayload{StopReason: out.StopReason})
	}
	return out, nil
}

// mayContinue reports whether the workflow of a session that runs node
// may continue as new (carry.go): a parallel team's, unless the workflow
// was started by a build before it (workflow.GetVersion; its history
// replays as it was made).
func mayContinue(wctx workflow.Context, node spawn.Node) bool {
	return node.SourceType() == event.SourceTeamParallel &&
		workflow.GetVersion(wctx, versionContinue, workflow.DefaultVersion, 1) >= 1
}

// versionEndLocal is the workflow change that writes a session's end with a
// local activity (recorded as one marker) instead of an activity: a
// member of a team costs one server round trip and workflow task less
// (BENCHMARKS.md, "Large teams on Temporal"). Histories of the activity
// replay it as it was.
const versionEndLocal = "end-local-activity"

// storeEnd runs the End activity: as a local activity in the workflow's
// task, like Create, where the session's input says so (local: its
// EndLocal) or the history has versionEndLocal. The write is idempotent
// (stored events are matched by encoding), as a local activity run again
// after a lost workflow task needs.
func storeEnd(ctx workflow.Context, local bool, in EndInput) error {
	if !local && workflow.GetVersion(ctx, versionEndLocal, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, storeOptions), actEnd, in).Get(ctx, nil)
	}
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, localStoreOptions), actEnd, in).Get(ctx, nil)
}

// runNode runs node; a panic of the node's code ends the run with stop
// reason error, as in this process (a panic in workflow code would else
// fail the workflow task again and again).
func runNode(ctx context.Context, node spawn.Node, inv *spawn.Invocation) (res spawn.Result) {
	defer func() {
		if r := recover(); r != nil {
			res = spawn.Result{StopReason: event.StopError, Err: fmt.Errorf("panic: %v", r)}
			if inv.ToolCallID == "" && inv.Session.ParentID == "" {
				inv.Sink.Emit(event.RunError{Message: fmt.Sprintf("internal error: %v", r), Code: "panic", RunID: inv.RunID, AgentName: node.Name()})
			}
		}
	}()
	return node.Run(spawn.WithInvocation(ctx, inv), inv)
}

// storeUndelivered journals what was injected into the session after its
// last model request, as synthetic user messages of its conversation
// (docs/spec/HOOKS.md §3 rule 6), as spawn's session end does in this
// process.
func storeUndelivered(ctx context.Context, env *wfEnv, j *journal, left []string) {
	now := env.Now(ctx)
	for _, c := range left {
		j.msgs = append(j.msgs, session.Message{ID: env.NewID(ctx, id.Message), SessionID: j.sid, CreatedAt: now,
			Message: model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: c}}, Synthetic: true}})
	}
}
