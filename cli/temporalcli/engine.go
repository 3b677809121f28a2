package temporalcli

import (
	"context"
	"errors"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/durable"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// temporalEngine is the pool.Engine of a manifest whose execution engine is
// temporal: a root run is submitted to the pool's task queue, where
// `agentpool worker` processes run it, and its tree's events are followed
// from the shared store (durable.RunRoot). Every command that runs root
// sessions (run, serve acp|agui|opencode|web) gives it to its pool.
type temporalEngine struct {
	c     client.Client
	store session.Store
	queue string
	// approver shows the runs' approval requests in the command's broker
	// (nil: the command has none, and an ask is refused on the worker).
	approver *durable.Approver
}

// Engine implements cli.Temporal: it dials the frontend of x and returns
// the engine that submits root runs to x's task queue. Close it (Pool.Close
// does) to close the client.
func (Temporal) Engine(x config.Execution, st session.Store, log *slog.Logger, tp trace.TracerProvider, approvals *approval.Broker) (pool.Engine, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := dial(x, log, tp)
	if err != nil {
		return nil, err
	}
	e := &temporalEngine{c: c, store: st, queue: x.TaskQueue}
	if approvals != nil {
		e.approver = &durable.Approver{Client: c, Broker: approvals, Logger: log}
	}
	return e, nil
}

// ReopenApprovals shows again the requests of the runs that wait on the
// engine (durable.Approver.Reopen); nothing without a broker.
func (e *temporalEngine) ReopenApprovals(ctx context.Context) (wait func(), err error) {
	if e.approver == nil {
		return func() {}, nil
	}
	return e.approver.Reopen(ctx, e.store)
}

// FollowRun follows the running root's tree from the events of its log
// after afterSeq on until its workflow ends (durable.Approver.Follow):
// sink gets them, and its approval requests are shown in the command's
// broker. serve acp calls it when the editor loads a root that runs on
// the engine.
func (e *temporalEngine) FollowRun(ctx context.Context, root string, afterSeq int64, sink event.Sink) error {
	if e.approver == nil {
		return errors.New("the command has no approval broker to show the run's requests in")
	}
	return e.approver.Follow(ctx, e.store, root, afterSeq, sink)
}

// Cancel implements pool.EngineCanceller: the session's workflow is
// cancelled (durable.CancelSession).
func (e *temporalEngine) Cancel(ctx context.Context, sessionID, by string) (<-chan struct{}, error) {
	return durable.CancelSession(ctx, e.c, sessionID, by)
}

// Message implements pool.EngineMessenger: a signal to the session's
// workflow (durable.MessageSession).
func (e *temporalEngine) Message(ctx context.Context, sessionID, by, text string) error {
	return durable.MessageSession(ctx, e.c, sessionID, by, text)
}

// RunRoot implements pool.Engine.
func (e *temporalEngine) RunRoot(ctx context.Context, run pool.EngineRun, sink event.Sink) (spawn.Result, error) {
	_, out, err := durable.RunRoot(ctx, e.c, e.store, durable.RootRequest{
		Node: run.Node, Prompt: run.Prompt, TaskQueue: e.queue,
		Stored: run.Session, History: run.History, RunID: run.RunID,
		SubmitterHooks: true, // pool.RunSink runs them
		Approver:       e.approver,
	}, sink)
	if err != nil {
		return spawn.Result{}, err
	}
	return out.Result(), nil
}

// Close closes the Temporal client (Pool.Close calls it).
func (e *temporalEngine) Close() error {
	e.c.Close()
	return nil
}
