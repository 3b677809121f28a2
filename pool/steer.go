package pool

import (
	"context"
	"errors"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// MessageOrContinue sends a person's text (from the front end by) to
// session sessionID, as every front end's "message this session" does
// (docs/control.md): a running session reads it at its next model request
// (Message; on an engine, a signal), and continued is nil; a session that
// has ended is continued in a run of its own (RunSink with its SessionID
// and its agent, the text its prompt, its events to sink), and continued
// is how that run ended. A finished child whose tree's run goes on cannot
// be continued yet: the error errors.Is session.ErrRunning (its parent can
// continue it, send_message). Other errors are Message's and RunSink's
// (session.ErrNotFound, spawn.ErrRunsElsewhere, an empty or too long
// text).
func (p *Pool) MessageOrContinue(ctx context.Context, sessionID, by, text string, sink event.Sink) (continued *RunResult, err error) {
	err = p.Message(ctx, sessionID, by, text)
	if !errors.Is(err, spawn.ErrNotRunning) {
		return nil, err
	}
	rec, err := p.store.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	res, err := p.RunSink(ctx, RunRequest{Node: rec.AgentName, SessionID: sessionID, Prompt: text}, sink)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// maxLineage bounds the walks up a session's ancestors (deeper than any
// max_depth a pool allows).
const maxLineage = 64

// engineEndPoll is how often Ended reads the store for a session that
// runs on the engine.
const engineEndPoll = 200 * time.Millisecond

// Runs reports whether session sessionID runs in one of this pool's
// runs: in this process (Runtime.Running), or, under an engine
// (Options.Engine), as a session that the store says is running in a
// tree whose root run this pool handed to the engine (its root is
// registered in the runtime for the run's duration). Front ends ask it
// before they steer one child of a run (cancel, message).
func (p *Pool) Runs(ctx context.Context, sessionID string) bool {
	if p.rt.Running(sessionID) {
		return true
	}
	if p.engine == nil {
		return false
	}
	rec, err := p.store.GetSession(ctx, sessionID)
	if err != nil || rec.Status != session.StatusRunning {
		return false
	}
	for i := 0; i < maxLineage && rec.ParentID != ""; i++ {
		if p.rt.Running(rec.ParentID) {
			return true
		}
		if rec, err = p.store.GetSession(ctx, rec.ParentID); err != nil {
			return false
		}
	}
	return false
}

// Ended returns a channel closed once the run of session sessionID has
// ended, false when the session does not run in this pool (Runs). For a
// session the runtime runs it is Runtime.Ended's; for one on the engine
// the store's record is read every engineEndPoll until it is no longer
// running or ctx ends (then the channel is never closed).
func (p *Pool) Ended(ctx context.Context, sessionID string) (<-chan struct{}, bool) {
	if ch, ok := p.rt.Ended(sessionID); ok {
		return ch, true
	}
	if !p.Runs(ctx, sessionID) {
		return nil, false
	}
	ch := make(chan struct{})
	go func() {
		t := time.NewTicker(engineEndPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if rec, err := p.store.GetSession(ctx, sessionID); err == nil && rec.Status != session.StatusRunning {
				close(ch)
				return
			}
		}
	}()
	return ch, true
}
