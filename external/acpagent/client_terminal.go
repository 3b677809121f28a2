package acpagent

import (
	"context"

	acp "github.com/coder/acp-go-sdk"
)

// terminal/* (terminal.go): each request is routed to the turn of its
// session, like fs/*; refused when the member may not use terminals (the
// capability was not offered) or no prompt is in progress.

func (c client) CreateTerminal(ctx context.Context, req acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	t, err := c.terminalTurn(req.SessionId)
	if err != nil {
		return acp.CreateTerminalResponse{}, err
	}
	return t.createTerminal(ctx, req)
}

// The end of a terminal's command, when seen (an exit status, the wait's
// end, a kill, a release), is when what it changed is captured
// (turn.ended), before the agent has the answer.

func (c client) TerminalOutput(ctx context.Context, req acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	t, term, err := c.terminal(req.SessionId, req.TerminalId)
	if err != nil {
		return acp.TerminalOutputResponse{}, err
	}
	res := term.output(ctx)
	if res.ExitStatus != nil {
		t.cp.ended(ctx, term)
	}
	return res, nil
}

func (c client) WaitForTerminalExit(ctx context.Context, req acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	t, err := c.terminalTurn(req.SessionId)
	if err != nil {
		return acp.WaitForTerminalExitResponse{}, err
	}
	term, err := t.lookupTerminal(req.TerminalId)
	if err != nil {
		return acp.WaitForTerminalExitResponse{}, err
	}
	ctx, cancel := t.opContext(ctx) // the run's end stops the wait too
	defer cancel()
	res, err := term.wait(ctx)
	if err == nil {
		t.cp.ended(ctx, term)
	}
	return res, err
}

func (c client) KillTerminal(ctx context.Context, req acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	t, term, err := c.terminal(req.SessionId, req.TerminalId)
	if err != nil {
		return acp.KillTerminalResponse{}, err
	}
	if err := term.sh.Kill(); err != nil {
		return acp.KillTerminalResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	t.cp.ended(ctx, term) // Kill returns once it has ended
	return acp.KillTerminalResponse{}, nil
}

func (c client) ReleaseTerminal(ctx context.Context, req acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	t, err := c.terminalTurn(req.SessionId)
	if err != nil {
		return acp.ReleaseTerminalResponse{}, err
	}
	t.mu.Lock()
	ts := t.terms
	t.mu.Unlock()
	if ts == nil {
		return acp.ReleaseTerminalResponse{}, acp.NewInvalidParams(map[string]any{"error": "no terminal " + req.TerminalId + " in this session"})
	}
	term, err := ts.release(req.TerminalId)
	if err != nil {
		return acp.ReleaseTerminalResponse{}, err
	}
	if err := term.sh.Kill(); err != nil {
		return acp.ReleaseTerminalResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	t.cp.ended(ctx, term)
	return acp.ReleaseTerminalResponse{}, nil
}

// terminalTurn is the turn a terminal request belongs to.
func (c client) terminalTurn(sid acp.SessionId) (*turn, error) {
	if !c.a.n.cfg.AllowTerminal {
		return nil, acp.NewMethodNotFound("terminal (allow_terminal is off for agent " + c.a.n.cfg.Name + ")")
	}
	t, ok := c.a.turn(sid)
	if !ok {
		return nil, acp.NewInvalidParams(map[string]any{"error": "no prompt is in progress in session " + string(sid)})
	}
	return t, nil
}

// terminal is the terminal id of the session's turn, with the turn.
func (c client) terminal(sid acp.SessionId, id string) (*turn, *terminal, error) {
	t, err := c.terminalTurn(sid)
	if err != nil {
		return nil, nil, err
	}
	term, err := t.lookupTerminal(id)
	return t, term, err
}
