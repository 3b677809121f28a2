package acp

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool/workspace"
)

// releaseTimeout bounds a terminal/release the server sends on its own (a
// release the tool asked for earlier, sent once its tool call was shown).
const releaseTimeout = 5 * time.Second

// clientTerminal runs the shell tool's commands in the editor's terminals
// (workspace.Terminal) for the runs of one prompt of an ACP session:
// terminal/create, terminal/output, terminal/wait_for_exit, terminal/kill
// and terminal/release, used only when the client advertised
// clientCapabilities.terminal.
//
// The editor shows a terminal only when a tool call embeds it, and only
// until it is released. So a terminal is embedded as soon as it exists in
// the running tool call whose input command it runs (when exactly one open
// tool call of that session matches), and in the call's last update in
// any case; a release the tool asks for before that update was sent waits
// for it (terminals.shown), or for the prompt's end.
type clientTerminal struct {
	c       *conn
	session string     // the ACP session the requests name
	conv    *converter // the prompt's; nil: no early embedding
}

var _ workspace.Terminal = clientTerminal{}

type envVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type createTerminalParams struct {
	SessionID       string        `json:"sessionId"`
	Command         string        `json:"command"`
	Args            []string      `json:"args"`
	Env             []envVariable `json:"env,omitempty"`
	Cwd             string        `json:"cwd,omitempty"`
	OutputByteLimit int           `json:"outputByteLimit,omitempty"`
}

type terminalParams struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
}

type terminalExitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

func (e terminalExitStatus) status() workspace.ExitStatus {
	st := workspace.ExitStatus{Code: e.ExitCode}
	if e.Signal != nil {
		st.Signal = *e.Signal
	}
	return st
}

// Start creates a terminal in the editor that runs the command.
func (t clientTerminal) Start(ctx context.Context, req workspace.TerminalRequest) (workspace.TerminalProcess, error) {
	p := createTerminalParams{
		SessionID: t.session, Command: req.Command, Args: req.Args, Cwd: req.Cwd,
		OutputByteLimit: max(req.OutputByteLimit, 0),
	}
	if p.Args == nil {
		p.Args = []string{}
	}
	for k, v := range req.Env {
		p.Env = append(p.Env, envVariable{Name: k, Value: v})
	}
	sort.Slice(p.Env, func(i, j int) bool { return p.Env[i].Name < p.Env[j].Name })
	var res struct {
		TerminalID string `json:"terminalId"`
	}
	if err := t.c.calls.call(ctx, t.session, methodTerminalCreate, p, &res); err != nil {
		return nil, clientError(methodTerminalCreate, err)
	}
	if res.TerminalID == "" {
		return nil, errors.New("the editor's terminal/create answer has no terminalId")
	}
	t.c.terms.add(res.TerminalID, t.session)
	if t.conv != nil {
		sid := t.session
		if inv := spawn.InvocationFrom(ctx); inv != nil {
			sid = inv.Session.ID
		}
		t.conv.attachTerminal(sid, req.Args, res.TerminalID)
	}
	return &clientProcess{c: t.c, session: t.session, id: res.TerminalID}, nil
}

// clientProcess is a command running in an editor's terminal.
type clientProcess struct {
	c       *conn
	session string
	id      string
}

var _ workspace.TerminalProcess = (*clientProcess)(nil)

func (p *clientProcess) ID() string { return p.id }

func (p *clientProcess) params() terminalParams {
	return terminalParams{SessionID: p.session, TerminalID: p.id}
}

// Wait asks terminal/wait_for_exit; it returns ctx's error when ctx ends
// first (the request is then abandoned; its late answer is dropped).
func (p *clientProcess) Wait(ctx context.Context) (workspace.ExitStatus, error) {
	var res terminalExitStatus
	if err := p.c.calls.call(ctx, p.session, methodTerminalWait, p.params(), &res); err != nil {
		if ctx.Err() != nil {
			return workspace.ExitStatus{}, ctx.Err()
		}
		return workspace.ExitStatus{}, clientError(methodTerminalWait, err)
	}
	return res.status(), nil
}

// Output asks terminal/output.
func (p *clientProcess) Output(ctx context.Context) (string, bool, *workspace.ExitStatus, error) {
	var res struct {
		Output     string              `json:"output"`
		Truncated  bool                `json:"truncated"`
		ExitStatus *terminalExitStatus `json:"exitStatus"`
	}
	if err := p.c.calls.call(ctx, p.session, methodTerminalOutput, p.params(), &res); err != nil {
		return "", false, nil, clientError(methodTerminalOutput, err)
	}
	var exit *workspace.ExitStatus
	if res.ExitStatus != nil {
		st := res.ExitStatus.status()
		exit = &st
	}
	return res.Output, res.Truncated, exit, nil
}

// Kill asks terminal/kill.
func (p *clientProcess) Kill(ctx context.Context) error {
	if err := p.c.calls.call(ctx, p.session, methodTerminalKill, p.params(), nil); err != nil {
		return clientError(methodTerminalKill, err)
	}
	return nil
}

// Release sends terminal/release once the tool call that shows the
// terminal was sent; before that it only records the wish (see
// clientTerminal).
func (p *clientProcess) Release(ctx context.Context) error {
	return p.c.terms.release(ctx, p.id)
}

// terminals are the live client terminals of a connection.
type terminals struct {
	c  *conn
	mu sync.Mutex
	m  map[string]*termState // by terminal id
}

type termState struct {
	session string // the ACP session
	shown   bool   // its tool call was sent (or never will be)
	wanted  bool   // the tool asked for its release
}

func (ts *terminals) add(id, session string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]*termState{}
	}
	ts.m[id] = &termState{session: session}
}

// embeddable implements terminalView: a terminal not released yet.
func (ts *terminals) embeddable(id string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.m[id] != nil
}

// shown implements terminalView: a release that waited for the tool
// call's update is sent now, after that update (same queue).
func (ts *terminals) shown(id string) {
	ts.mu.Lock()
	st := ts.m[id]
	if st == nil {
		ts.mu.Unlock()
		return
	}
	st.shown = true
	if !st.wanted {
		ts.mu.Unlock()
		return
	}
	delete(ts.m, id)
	ts.mu.Unlock()
	// Queued now, so that it follows the update on the wire and precedes
	// the prompt's answer; its answer is awaited in the background.
	_, wait, err := ts.c.calls.start(st.session, methodTerminalRelease, terminalParams{SessionID: st.session, TerminalID: id})
	if err != nil {
		ts.c.log.Debug("acp: terminal/release not sent", "terminal", id, "err", err)
		return
	}
	ts.c.bg.Go(func() {
		ctx, cancel := context.WithTimeout(ts.c.ctx, releaseTimeout)
		defer cancel()
		if err := wait(ctx, nil); err != nil {
			ts.c.log.Debug("acp: terminal/release failed", "terminal", id, "err", err)
		}
	})
}

// release sends terminal/release now if the terminal was shown, else
// when it is.
func (ts *terminals) release(ctx context.Context, id string) error {
	ts.mu.Lock()
	st := ts.m[id]
	switch {
	case st == nil:
		ts.mu.Unlock()
		return nil // released already
	case !st.shown:
		st.wanted = true
		ts.mu.Unlock()
		return nil
	}
	delete(ts.m, id)
	ts.mu.Unlock()
	return ts.send(ctx, st.session, id)
}

// releaseWanted sends the releases of session's terminals that still wait
// for their tool call (one that was never shown): at the prompt's end.
func (ts *terminals) releaseWanted(session string) {
	ts.mu.Lock()
	var ids []string
	for id, st := range ts.m {
		if st.session == session && st.wanted {
			ids = append(ids, id)
			delete(ts.m, id)
		}
	}
	ts.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(ts.c.ctx, releaseTimeout)
		ts.send(ctx, session, id)
		cancel()
	}
}

func (ts *terminals) send(ctx context.Context, session, id string) error {
	err := ts.c.calls.call(ctx, session, methodTerminalRelease, terminalParams{SessionID: session, TerminalID: id}, nil)
	if err != nil {
		ts.c.log.Debug("acp: terminal/release failed", "terminal", id, "err", err)
		return clientError(methodTerminalRelease, err)
	}
	return nil
}
