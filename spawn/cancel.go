package spawn

import (
	"context"
	"errors"
	"fmt"
)

// Cancelling one session of a run (docs/control.md): every running
// session, root or child, runs under a context of its own whose cancel
// function its registry entry holds. Runtime.Cancel cancels that context
// with a *CancelledError as the cause: the session and its subtree end
// aborted (settle), each child's spawn_session_end is emitted once as
// ever, and the parent, whose context is not the child's, reads the
// cancellation in its tool result and goes on. Cancelling a root session
// cancels its whole run, as cancelling the run's own context does.

// ErrNotRunning is the error (errors.Is) of a cancel of a session that is
// stored but not running.
var ErrNotRunning = errors.New("session is not running")

// ErrRunsElsewhere is the error (errors.Is) of a cancel of a session that
// the store says is running but this runtime does not run: another
// process (or a durable engine's worker) runs it.
var ErrRunsElsewhere = errors.New("session runs in another process")

// CancelledError is the cause of a session cancelled on its own
// (Runtime.Cancel): a session's Result.Err, and what its parent's tool
// result says.
type CancelledError struct {
	SessionID string // the session that was cancelled (its descendants carry the same cause)
	By        string // who asked: the front end, as approvals name it ("opencode", "acp", ...)
	// Agent, when set, is the parent agent that stopped its child with
	// the task_stop tool (By is then "task_stop").
	Agent string
}

func (e *CancelledError) Error() string {
	if e.Agent != "" {
		return fmt.Sprintf("session %s was stopped by its parent agent %s (task_stop)", e.SessionID, e.Agent)
	}
	by := e.By
	if by == "" {
		by = "a front end"
	}
	return fmt.Sprintf("session %s was cancelled by the user (from %s)", e.SessionID, by)
}

// Is makes errors.Is(err, context.Canceled) true: a cancellation is one.
func (e *CancelledError) Is(target error) bool { return target == context.Canceled }

// Cancel cancels the running session sessionID of this runtime: a child
// (sync or background, worker, team member, at any depth) ends aborted
// with its subtree while its parent and siblings go on; a root session's
// whole run ends. by names who asked (the front end). The returned
// channel is closed once the session's run has ended (for a child: after
// its spawn_session_end).
//
// A session this runtime does not run is an error: one the store does not
// know errors.Is session.ErrNotFound; one that has ended, ErrNotRunning;
// one the store says is running, ErrRunsElsewhere (another process runs
// it: the command line asks that process through its control socket,
// internal/ctlsock).
func (rt *Runtime) Cancel(ctx context.Context, sessionID, by string) (<-chan struct{}, error) {
	return rt.cancelWith(ctx, &CancelledError{SessionID: sessionID, By: by})
}

// cancelWith cancels the running session ce.SessionID with ce as cause.
func (rt *Runtime) cancelWith(ctx context.Context, ce *CancelledError) (<-chan struct{}, error) {
	if h, ok := rt.lookupSession(ce.SessionID); ok {
		return h.cancelRun(ce), nil
	}
	return nil, rt.notRunning(ctx, "cancel", ce.SessionID)
}

// cancelRun cancels the session's run with cause, now or, when its
// context is not made yet, as soon as it is; it returns the channel
// closed when the run has ended.
func (h *handle) cancelRun(cause error) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cancel != nil {
		h.cancel(cause)
	} else if h.cancelCause == nil {
		h.cancelCause = cause
	}
	return h.endedLocked()
}

// runContext makes the context the session's run goes on under, the one
// Cancel cancels. The caller calls stop once the run has ended.
func (h *handle) runContext(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	h.mu.Lock()
	h.cancel = cancel
	if h.cancelCause != nil {
		cancel(h.cancelCause) // asked before the run began
	}
	h.mu.Unlock()
	return ctx, cancel
}

// finish tells the waiters of Cancel that the session's run has ended.
func (h *handle) finish() {
	h.mu.Lock()
	h.finished = true
	if h.ended != nil {
		close(h.ended)
	}
	h.mu.Unlock()
}

func (h *handle) endedLocked() <-chan struct{} {
	if h.ended == nil {
		h.ended = make(chan struct{})
		if h.finished {
			close(h.ended)
		}
	}
	return h.ended
}

// CancelContext returns the context a root run that does not go through
// RunRoot (a run on a durable engine) goes on under, so that Cancel of
// its session cancels it, and the function to call once it has ended.
func (inv *Invocation) CancelContext(ctx context.Context) (context.Context, func()) {
	ctx, cancel := inv.h.runContext(ctx)
	return ctx, func() {
		cancel(nil)
		inv.h.finish()
	}
}
