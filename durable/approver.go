package durable

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"go.temporal.io/sdk/client"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// Approver is the submitter's side of the approvals of durable runs: it
// shows the requests the workflows store (approval_requested, read from
// the store by the follower) in Broker, where the front ends attached to
// it answer them as they answer the requests of a run in this process,
// and sends each answer to the asking session's workflow
// (SignalApproval). A request the workflow settled first (its timeout,
// the run's end) is withdrawn from the broker.
type Approver struct {
	Client client.Client
	Broker *approval.Broker
	// Policy is given to the run's workflows (SessionInput.Approvals).
	Policy Approvals
	Logger *slog.Logger // nil: discarded
}

// watch is a sink in front of a follower's sink: it hands every event on,
// and shows the open requests of the events it saw once the poll that
// read them is over (polled), so that a request read with its answer (a
// log read again from its start) is never shown.
type watch struct {
	a    *Approver
	next event.Sink
	ctx  context.Context
	wg   sync.WaitGroup

	// mu guards open, shown and closed: a request goes from open to shown
	// in one step (polled), and a watch is one follower's, at the pace of
	// its run's approval requests.
	mu     sync.Mutex
	open   map[string]approval.Request        // read, not answered, not yet shown
	shown  map[string]context.CancelCauseFunc // shown: withdraws it
	closed bool
}

// errSettled withdraws a shown request that the workflow settled.
var errSettled = errors.New("the run settled the request")

// watch returns the sink for a follower of a run, and stop, which
// withdraws the requests still shown and waits for their asks to end.
func (a *Approver) watch(ctx context.Context, next event.Sink) (*watch, func()) {
	ctx, cancel := context.WithCancel(ctx)
	w := &watch{a: a, next: next, ctx: ctx, open: map[string]approval.Request{}, shown: map[string]context.CancelCauseFunc{}}
	return w, func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		cancel()
		w.wg.Wait()
	}
}

// Emit implements event.Sink.
func (w *watch) Emit(e event.Event) {
	w.note(e)
	w.next.Emit(e)
}

func (w *watch) note(e event.Event) {
	inner := e
	if s, ok := e.(event.Subagent); ok {
		inner = s.Event
	}
	if req, ok, err := approval.ParseRequested(inner); ok {
		if err != nil {
			w.a.logger().Warn("approval request in the log not shown", "err", err)
			return
		}
		w.mu.Lock()
		if _, shown := w.shown[req.ID]; !shown {
			w.open[req.ID] = req
		}
		w.mu.Unlock()
		return
	}
	if r, ok, _ := approval.ParseReplied(inner); ok {
		w.mu.Lock()
		delete(w.open, r.RequestID)
		withdraw := w.shown[r.RequestID]
		w.mu.Unlock()
		if withdraw != nil {
			withdraw(errSettled)
		}
	}
}

// polled shows the requests read and still open.
func (w *watch) polled() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	for rid, req := range w.open {
		delete(w.open, rid)
		ctx, cancel := context.WithCancelCause(w.ctx)
		w.shown[rid] = cancel
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer cancel(nil)
			w.a.ask(ctx, req)
		}()
	}
}

// ask waits in the broker for the answer to req and signals it to the
// asking session's workflow.
func (a *Approver) ask(ctx context.Context, req approval.Request) {
	ans, err := a.Broker.Ask(ctx, req)
	if err != nil {
		return // withdrawn: settled by the run, or the follower stopped
	}
	sig := ApprovalSignal{RequestID: req.ID, Reply: ans.Reply, Message: ans.Message, By: ans.By}
	if err := a.Client.SignalWorkflow(context.WithoutCancel(ctx), req.SessionID, "", SignalApproval, sig); err != nil {
		a.logger().Warn("send the answer to the run", "session", req.SessionID, "request", req.ID, "err", err)
	}
}

// Reopen shows again the requests of the runs that wait on the engine
// while no process follows them (the process that submitted them ended,
// and this one started): it follows the tree of every running root of the
// engine in st from its log's start, as RunRoot does, until the root's
// workflow ends or ctx ends, showing the requests still open and those
// asked later. wait waits for the followers, which end with ctx.
func (a *Approver) Reopen(ctx context.Context, st session.Store) (wait func(), err error) {
	roots, err := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
	if err != nil {
		return func() {}, err
	}
	var wg sync.WaitGroup
	for _, r := range roots {
		if r.Status != session.StatusRunning || r.Metadata[session.MetaEngine] != EngineName {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.follow(ctx, st, r.ID); err != nil && ctx.Err() == nil {
				a.logger().Warn("follow a run for its approvals", "session", r.ID, "err", err)
			}
		}()
	}
	return wg.Wait, nil
}

// follow follows root's tree from its log's start until its workflow
// ended, showing its requests.
func (a *Approver) follow(ctx context.Context, st session.Store, root string) error {
	return a.Follow(ctx, st, root, 0, event.Discard)
}

// Follow follows root's tree in st, from the events of root's log after
// afterSeq on (the children those events start, at any depth, from their
// logs' starts), until root's workflow ends or ctx ends: sink gets each
// event as a run's sink does (a child's wrapped in event.Subagent), and
// the requests still open, and those asked later, are shown in Broker,
// their answers signalled as Reopen's are. A front end that opens one
// running root (ACP's session/load) follows it from its open run's
// run_started. The requests still shown when it returns are withdrawn.
func (a *Approver) Follow(ctx context.Context, st session.Store, root string, afterSeq int64, sink event.Sink) error {
	w, stop := a.watch(ctx, sink)
	defer stop()
	f := newFollower(st, root, afterSeq, w)
	f.polled = w.polled
	done := make(chan struct{})
	ended := make(chan error, 1)
	go func() {
		ended <- a.Client.GetWorkflow(ctx, root, "").Get(ctx, nil)
		close(done)
	}()
	err := f.follow(ctx, done)
	<-done
	if werr := <-ended; err == nil && werr != nil && ctx.Err() == nil {
		// A run that failed or was cancelled ended all the same.
		a.logger().Info("a followed run ended", "session", root, "err", werr)
	}
	return err
}

func (a *Approver) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Logger
}
