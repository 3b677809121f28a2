package spawn

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// A session's run: how a node runs in a registered session and how the
// run ends. Root runs (RunRoot, which the pool calls) and children (Spawn)
// go through runSession, the one place where a session's run ends and the
// one writer of a session's final record.

// RunEnd is how a root run ended.
type RunEnd struct {
	Result Result
	// TotalUsage and TotalCost are the session's totals once the run has
	// ended, as its record has them: every run of the session (a resumed
	// session goes on counting), its descendants' included.
	TotalUsage event.Usage
	TotalCost  float64
}

// RunRoot runs node in the root session of inv (see NewRoot) and ends the
// session's run as Spawn ends a child's: a panic of the node ends it with
// stop reason error (and a run_error event, the last of the root's
// stream), the session's async children are waited for, the session is
// released (do not call Release), what was injected but never delivered is
// stored with its conversation, and the session's final record is written
// (status, stop reason, usage, cost, totals, duration, error). started is
// when the run began: its duration counts from it.
func (rt *Runtime) RunRoot(ctx context.Context, node Node, inv *Invocation, started time.Time) RunEnd {
	ctx, stop := inv.CancelContext(ctx) // Cancel of the root ends the run
	defer stop()
	e := rt.runSession(ctx, node, inv, started)
	return RunEnd{Result: e.res, TotalUsage: e.sessionUsage, TotalCost: e.sessionCost}
}

// ended is how a session's run ended.
type ended struct {
	res        Result
	hasResult  bool        // false when the node panicked
	errText    string      // res.Err's text, "" without one
	usage      event.Usage // the run's own usage and its descendants'
	cost       float64     // likewise for cost
	durationMS int64
	// sessionUsage and sessionCost are the record's totals after the run.
	sessionUsage event.Usage
	sessionCost  float64
}

// runSession runs node in the registered session of inv and ends the
// session's run (see RunRoot). ctx is the context the run may be cancelled
// through; what the run did is stored even when it was.
func (rt *Runtime) runSession(ctx context.Context, node Node, inv *Invocation, started time.Time) ended {
	res, panicked := rt.runNode(ctx, node, inv)
	left := rt.Release(inv)
	e := ended{res: res, hasResult: panicked == nil}
	if panicked != nil && inv.isRoot() {
		// A child's stream ends with its spawn_session_end; a root's needs
		// an end of its own.
		inv.Sink.Emit(event.RunError{Message: fmt.Sprintf("internal error: %v", panicked), Code: "panic", RunID: inv.RunID, AgentName: node.Name()})
	}
	settle(ctx, &e.res)
	persist := detach.Context(ctx)
	rt.storeUndelivered(persist, inv.Session.ID, left)

	childUsage, childCost := inv.childTotals()
	if c := inv.Continue; c != nil && c.Waiting != nil {
		// The children that ended before the run's process died: the run
		// that died never added them up.
		u, cost := c.Waiting.EndedUsage()
		childUsage.Add(u)
		childCost += cost
	}
	e.usage = e.res.Usage
	e.usage.Add(childUsage)
	e.cost = e.res.Cost + childCost
	e.durationMS = time.Since(started).Milliseconds()
	if e.res.Err != nil {
		e.errText = e.res.Err.Error()
	}
	err := rt.cfg.Store.UpdateSession(persist, inv.Session.ID, func(s *session.Session) {
		s.Status = session.StatusFromStop(e.res.StopReason)
		s.StopReason = e.res.StopReason
		s.Usage.Add(e.res.Usage)
		s.Cost += e.res.Cost
		s.TotalUsage.Add(e.usage)
		s.TotalCost += e.cost
		s.DurationMS = e.durationMS
		delete(s.Metadata, session.MetaRunSpent) // in the totals now
		if e.errText != "" {
			if s.Metadata == nil {
				s.Metadata = map[string]any{}
			}
			s.Metadata["error"] = e.errText
		}
		e.sessionUsage, e.sessionCost = s.TotalUsage, s.TotalCost
	})
	if err != nil {
		rt.log.Warn("store session end", "session", inv.Session.ID, "err", err)
		// The record's totals are unknown: this run's are what there is.
		e.sessionUsage, e.sessionCost = e.usage, e.cost
	}
	return e
}

// runNode runs node in inv with inv in its context. A panic of the node is
// recovered and returned, with a result that says so.
func (rt *Runtime) runNode(ctx context.Context, node Node, inv *Invocation) (res Result, panicked any) {
	defer func() {
		if r := recover(); r != nil {
			rt.log.Error("session run panicked", "session", inv.Session.ID, "panic", r, "stack", string(debug.Stack()))
			res, panicked = Result{StopReason: event.StopError, Err: fmt.Errorf("panic: %v", r)}, r
		}
	}()
	return node.Run(WithInvocation(ctx, inv), inv), nil
}

// settle completes a node's stop reason: completed when it gave none (error
// when it gave an error); a run that did not complete while its context
// was cancelled was aborted, or failed when the cause is its spawn
// timeout.
func settle(ctx context.Context, res *Result) {
	if res.StopReason == "" {
		res.StopReason = event.StopCompleted
		if res.Err != nil {
			res.StopReason = event.StopError
		}
	}
	if cause := context.Cause(ctx); cause != nil && res.StopReason != event.StopCompleted {
		if errors.Is(cause, ErrTimeout) {
			res.StopReason, res.Err = event.StopError, cause
		} else {
			res.StopReason = event.StopAborted
		}
	}
}

// storeUndelivered stores what was injected into a session after its last
// model request with its conversation, rather than losing it
// (docs/spec/HOOKS.md §3 rule 6).
func (rt *Runtime) storeUndelivered(ctx context.Context, sessionID string, left []string) {
	if len(left) == 0 {
		return
	}
	msgs := make([]session.Message, len(left))
	for i, c := range left {
		msgs[i] = session.Message{ID: id.Ascending(id.Message), CreatedAt: time.Now(), Message: model.Message{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: c}}, Synthetic: true}}
	}
	if err := rt.cfg.Store.AppendMessages(ctx, sessionID, msgs...); err != nil {
		rt.log.Warn("store undelivered injections", "session", sessionID, "err", err)
	}
}
