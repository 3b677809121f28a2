// A run that goes on after a restart: session/load of a root whose run
// stopped (its process died) while a tool call of its tree waited for a
// person's answer (docs/approvals.md, Durable).

package acp

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// continueRun goes on with the stopped run openRun of the loaded root s,
// in the background, as a prompt runs (session/cancel and session/close
// cancel it, a session/prompt meanwhile is refused as busy): the pool
// claims the tree and relays its stored events of openRun (which the
// load's replay left out) through the run's converter, so that the
// editor sees the open cards again and the waiting requests, asked again
// with their ids, reach it as session/request_permission on them. What
// the run does next reaches it as session/update; no request answers it.
func (c *conn) continueRun(s *acpSession, openRun string) {
	ctx, cancel := context.WithCancel(c.ctx)
	run := &promptRun{cancel: cancel}
	s.mu.Lock()
	if s.run != nil { // a prompt came first: it closes the waiting tree
		s.mu.Unlock()
		cancel()
		return
	}
	s.run = run
	mode := s.mode
	s.mu.Unlock()
	c.mu.Lock()
	view := c.view
	c.mu.Unlock()
	c.wg.Go(func() {
		defer cancel()
		c.goOn(ctx, s, run, mode, view, openRun)
		s.mu.Lock()
		s.run = nil
		s.mu.Unlock()
	})
}

// goOn runs pool.Continue for continueRun and ends the run's cards.
func (c *conn) goOn(ctx context.Context, s *acpSession, run *promptRun, mode string, view spawnView, openRun string) {
	conv, done := c.runConverter(s, run, mode, view)
	defer done()
	relayed := &countingSink{next: conv}
	var req pool.RunRequest // the session's MCP toolsets are not lent to a continued run
	c.log.Info("acp: a run that waited for an answer goes on", "session", s.id, "run", openRun)
	res, err := c.s.pool.Continue(c.runContext(ctx, s, conv, &req), s.id, relayed)
	stop := res.Result.StopReason
	if run.cancelled.Load() || (err != nil && ctx.Err() != nil) {
		stop = event.StopAborted
	}
	if err != nil && relayed.n.Load() == 0 {
		// Nothing of the run was shown: another process went on with it
		// first (or its answer came first), or it could not go on. The
		// editor is shown what the store has of it, as a load shows it.
		if errors.Is(err, session.ErrRunning) || errors.Is(err, pool.ErrNotWaiting) {
			c.log.Info("acp: a run that waited for an answer is another process's", "session", s.id, "err", err)
		} else {
			c.log.Warn("acp: go on with a run that waited for an answer", "session", s.id, "err", err)
		}
		if rerr := c.replayRun(s.id, openRun); rerr != nil {
			c.log.Warn("acp: replay the run", "session", s.id, "err", rerr)
		}
		return
	}
	conv.Finish(stop)
	c.terms.releaseWanted(s.id)
	if err != nil {
		c.log.Warn("acp: a continued run failed", "session", s.id, "err", err)
		return
	}
	c.log.Info("acp: a continued run ended", "session", s.id, "stop_reason", stop)
}

// countingSink counts the events it hands on.
type countingSink struct {
	next event.Sink
	n    atomic.Int64
}

func (s *countingSink) Emit(e event.Event) {
	s.n.Add(1)
	s.next.Emit(e)
}
