package pool

import (
	"context"
	"errors"

	"github.com/agentpool/agentpool/event"
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
