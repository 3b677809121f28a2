package durable

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// A parent's steering of its own children (task_stop, send_message;
// docs/control.md) under the engine: each child is a child workflow of
// the parent's, so the parent's workflow reaches it without the store or
// a client. task_stop cancels the child workflow's context (a cancel
// request, kept in the child's history: it survives a worker kill) with
// the tool's cause, which the parent's result then carries;
// send_message is the SignalMessage of the child, read at its next model
// request as a person's is (with the parent's words, MessageSignal.Agent).
// A finished child is not continued under the engine (spawn.Resume).

// wfChild is a child workflow of the session, as Steerer sees it.
type wfChild struct {
	rec    session.Session
	cancel workflow.CancelFunc
	future workflow.ChildWorkflowFuture // nil until the child is started
	cause  *spawn.CancelledError        // set by StopChild
	ended  bool
}

var _ spawn.Steerer = (*wfEnv)(nil)

// child registers a child about to run (runChild).
func (e *wfEnv) child(rec session.Session, cancel workflow.CancelFunc) *wfChild {
	if e.kids == nil {
		e.kids = map[string]*wfChild{}
	}
	k := &wfChild{rec: rec, cancel: cancel}
	k.rec.Status = session.StatusRunning
	e.kids[rec.ID] = k
	return k
}

// end records how a child ended.
func (k *wfChild) end(stop event.StopReason) {
	k.ended = true
	k.rec.StopReason = stop
	switch stop {
	case event.StopAborted:
		k.rec.Status = session.StatusAborted
	case event.StopCompleted:
		k.rec.Status = session.StatusCompleted
	default:
		k.rec.Status = session.StatusError
	}
}

// cancelledBy records that a person at front end by cancels the child
// sessionID (SignalChildCancelled), unless its cause is known already.
func (e *wfEnv) cancelledBy(sessionID, by string) {
	if k, ok := e.kids[sessionID]; ok && k.cause == nil && !k.ended {
		k.cause = &spawn.CancelledError{SessionID: sessionID, By: by}
	}
}

// Child implements spawn.Steerer.
func (e *wfEnv) Child(_ context.Context, _ *spawn.Invocation, sessionID string) (session.Session, bool) {
	k, ok := e.kids[sessionID]
	if !ok {
		return session.Session{}, false
	}
	return k.rec, true
}

// StopChild implements spawn.Steerer: the child workflow's context is
// cancelled, and the wait is a workflow timer.
func (e *wfEnv) StopChild(ctx context.Context, _ *spawn.Invocation, sessionID string, cause *spawn.CancelledError, wait time.Duration) (bool, error) {
	k, ok := e.kids[sessionID]
	switch {
	case !ok:
		return false, fmt.Errorf("cancel %s: %w", sessionID, spawn.ErrNotYourChild)
	case k.ended:
		return false, fmt.Errorf("cancel %s: %w (%s)", sessionID, spawn.ErrNotRunning, k.rec.Status)
	}
	if k.cause == nil {
		k.cause = cause
	}
	k.cancel()
	wc := e.wctx(ctx)
	ended, err := workflow.AwaitWithTimeout(wc, wait, func() bool { return k.ended })
	if err != nil {
		return false, fmt.Errorf("cancel %s: %w", sessionID, context.Cause(ctx))
	}
	return ended, nil
}

// MessageChild implements spawn.Steerer: SignalMessage to the child's
// workflow, once it has started.
func (e *wfEnv) MessageChild(ctx context.Context, _ *spawn.Invocation, sessionID string, from spawn.Sender, text string) error {
	k, ok := e.kids[sessionID]
	switch {
	case !ok:
		return fmt.Errorf("message %s: %w", sessionID, spawn.ErrNotYourChild)
	case k.ended || k.future == nil:
		return fmt.Errorf("message %s: %w (%s)", sessionID, spawn.ErrNotRunning, k.rec.Status)
	}
	wc := e.wctx(ctx)
	sig := MessageSignal{By: from.By, Agent: from.Agent, Session: from.Session, Text: text}
	if err := k.future.SignalChildWorkflow(wc, SignalMessage, sig).Get(wc, nil); err != nil {
		if k.ended {
			return fmt.Errorf("message %s: %w (%s)", sessionID, spawn.ErrNotRunning, k.rec.Status)
		}
		return fmt.Errorf("message %s: %w", sessionID, err)
	}
	return nil
}
