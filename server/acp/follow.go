// A root that runs on a durable engine (execution: {engine: temporal})
// while no process follows it: session/load of such a root follows its
// open run, so that the requests its tree waits on, and those it asks
// later, reach the editor (docs/approvals.md, Durable, On Temporal).

package acp

import (
	"context"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// runFollower is a pool engine that can follow a root that runs on it
// from an event of its log on (cli/temporalcli: the Temporal
// engine's FollowRun): sink gets the tree's events, the approval requests
// are shown in the broker the server is attached to, and each answer goes
// to the run. It returns once the run's workflow ended, or ctx ended.
type runFollower interface {
	FollowRun(ctx context.Context, root string, afterSeq int64, sink event.Sink) error
}

// engineRun is the open run of a root that runs on the pool's engine.
type engineRun struct {
	f        runFollower
	runID    string
	afterSeq int64 // the root's log is followed from the run's run_started on
}

// openEngineRun returns the open run of the stored root s when s runs on
// the pool's engine and the engine can follow it; nil otherwise (a child,
// a session that ended, one that runs in this process).
func (c *conn) openEngineRun(ctx context.Context, s session.Session) (*engineRun, error) {
	f, ok := c.s.pool.Engine().(runFollower)
	if !ok || s.ParentID != "" || s.Status != session.StatusRunning || s.Metadata[session.MetaEngine] == nil {
		return nil, nil
	}
	recs, err := c.s.pool.Store().Events(ctx, s.ID, 0)
	if err != nil {
		return nil, err
	}
	var run *engineRun
	for _, r := range recs {
		switch v := r.Event.(type) {
		case event.RunStarted:
			run = &engineRun{f: f, runID: v.RunID, afterSeq: r.Seq - 1}
		case event.StreamComplete, event.RunError:
			run = nil
		}
	}
	return run, nil
}

// followRun follows the engine's run of the loaded root s in the
// background, as a prompt runs (session/cancel and session/close cancel
// it on the engine; the connection's end only stops following it, the
// run goes on there; a session/prompt meanwhile is refused as busy): its events
// from its run_started on (which the load's replay left out) go through
// the run's converter, so that the editor sees its cards again, and its
// requests, shown in the broker with their ids, reach it as
// session/request_permission on them. No request answers it.
func (c *conn) followRun(s *acpSession, er *engineRun) {
	// run.cancel (session/cancel, session/close) cancels the run on the
	// engine; the following goes on until the workflow ends (its aborted
	// ends reach the editor), or until the connection ends.
	cancelled, cancel := context.WithCancel(c.ctx)
	run := &promptRun{cancel: cancel}
	s.mu.Lock()
	if s.run != nil { // a prompt came first
		s.mu.Unlock()
		cancel()
		return
	}
	s.run = run
	mode := s.mode
	ws := s.ws
	s.mu.Unlock()
	c.mu.Lock()
	view := c.view
	c.mu.Unlock()
	ctx, stopFollowing := context.WithCancel(c.ctx)
	c.wg.Go(func() {
		select {
		case <-cancelled.Done():
		case <-ctx.Done():
			return
		}
		if !run.cancelled.Load() {
			return // the connection ended
		}
		c.log.Info("acp: cancel the followed run on the engine", "session", s.id)
		if _, err := c.s.pool.Cancel(ctx, s.id, frontEnd); err != nil {
			c.log.Warn("acp: cancel the run on the engine", "session", s.id, "err", err)
			stopFollowing()
		}
	})
	c.wg.Go(func() {
		defer cancel()
		defer stopFollowing()
		conv, done := c.runConverter(s, run, mode, view)
		defer done()
		conv.noTerminals = true // the tools run on the engine's workers
		conv.relocate = relocator(ws, c.s.pool.Workspace())
		c.log.Info("acp: follow a run on the engine", "session", s.id, "run", er.runID)
		err := er.f.FollowRun(ctx, s.id, er.afterSeq, conv)
		stop := event.StopAborted
		if err == nil {
			stop = event.StopError
			if rec, gerr := c.s.pool.Store().GetSession(context.WithoutCancel(ctx), s.id); gerr == nil && rec.StopReason != "" {
				stop = rec.StopReason
			}
		}
		conv.Finish(stop)
		s.mu.Lock()
		s.run = nil
		s.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			c.log.Warn("acp: follow a run on the engine", "session", s.id, "err", err)
			return
		}
		c.log.Info("acp: a followed run ended", "session", s.id, "stop_reason", stop)
	})
}
