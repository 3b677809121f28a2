package acpagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/shell"
	"github.com/agentpool/agentpool/tool/workspace"
)

// Bounds of terminal/*.
const (
	// maxTerminalOutput is the most output a terminal keeps (the
	// outputByteLimit of a terminal/create that asks for more, or for
	// none): the Bash tool's bound on a background shell's unread output.
	maxTerminalOutput = 1 << 20
	// maxTerminals bounds the terminals of a session not released yet
	// (the Bash tool runs at most 16 of them at once).
	maxTerminals = 32
	// maxScriptBytes bounds the command line a terminal/create makes
	// (command, args and env): /bin/sh -c takes it as one argument, which
	// Linux limits to 128 KiB.
	maxScriptBytes = 64 << 10
)

// terminals are the terminals the agent made in one session: background
// shells of a Bash tool of their own, so that closing them at the
// session's end kills every process they started (shell.Toolset.Close).
type terminals struct {
	shells *shell.Toolset
	bash   tool.Tool

	mu       sync.Mutex
	byID     map[string]*terminal
	reserved int // creates in progress, counted against maxTerminals
	closed   bool
}

// shellEnv is what the pool's hooks (hook.Registry) say of a session's
// environment file.
type shellEnv interface {
	ShellEnvFile(ctx context.Context) string
}

// terminal is one terminal: its shell and the end of its output, at most
// limit bytes, cut at a character boundary.
type terminal struct {
	sh    *shell.Background
	limit int
	call  string // the id of the Bash call that started it

	mu        sync.Mutex
	buf       []byte
	truncated bool
	seenEnd   bool // its end was observed: its changes are captured
}

// terminalSet returns the session's terminals, made by the first
// terminal/create; an error once the session has ended.
func (t *turn) terminalSet() (*terminals, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.terms == nil {
		if t.closed {
			return nil, errors.New("the prompt has been answered")
		}
		ts := &terminals{shells: shell.New(t.n.ws), byID: map[string]*terminal{}}
		if env, ok := t.inv.Runtime.Lifecycle().(shellEnv); ok {
			// The session's environment (CLAUDE_ENV_FILE), as the Bash
			// of native agents sources it.
			ts.shells.SourceEnvFile(env.ShellEnvFile)
		}
		for _, tl := range ts.shells.Tools() {
			if tl.Info().Name == shell.Bash {
				// Watched: the workspace is scanned before the command
				// starts, and again when its end is observed (ended).
				ts.bash = t.n.watch.Wrap(tl, t.n.ws)
			}
		}
		t.terms = ts
	}
	return t.terms, nil
}

// closeTerminals ends the session's terminals (the delegation has ended):
// every command still running is killed with its process tree, and the
// call returns once they are all gone.
func (t *turn) closeTerminals() {
	t.mu.Lock()
	ts := t.terms
	t.mu.Unlock()
	if ts == nil {
		return
	}
	ts.mu.Lock()
	ts.closed = true
	left := ts.byID
	ts.byID = map[string]*terminal{}
	ts.mu.Unlock()
	if err := ts.shells.Close(); err != nil {
		t.n.cfg.Logger.Warn("acpagent: a terminal could not be killed", "agent", t.n.cfg.Name, "err", err)
	}
	// Their end is now: what they changed is captured.
	ctx := context.WithoutCancel(t.ctx)
	for _, term := range left {
		t.cp.ended(ctx, term)
	}
}

// createTerminal serves terminal/create as our Bash tool with
// run_in_background: the command line goes through tools/pre-execute
// (hooks, the member's tool_approval for Bash, the approval flow; a hook
// may change it), then Bash starts it in the member's directory (or the
// request's cwd, which must be inside it) as a process tree, and
// tools/post-execute sees Bash's result.
func (t *turn) createTerminal(ctx context.Context, req acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	script, err := terminalScript(req)
	if err != nil {
		return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	limit := maxTerminalOutput
	if req.OutputByteLimit != nil {
		if *req.OutputByteLimit < 0 {
			return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"error": "outputByteLimit is negative"})
		}
		limit = min(*req.OutputByteLimit, maxTerminalOutput)
	}
	ctx, cancel := t.opContext(ctx)
	defer cancel()
	if req.Cwd != nil && *req.Cwd != "" {
		ws, err := t.cwd(*req.Cwd)
		if err != nil {
			return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"error": "cwd " + err.Error()})
		}
		ctx = workspace.WithWorkspace(ctx, ws)
	}
	ts, err := t.terminalSet()
	if err != nil {
		return acp.CreateTerminalResponse{}, acp.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if err := ts.reserve(); err != nil {
		return acp.CreateTerminalResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	term, err := t.startTerminal(ctx, ts, script, limit)
	ts.settle(term)
	if err != nil {
		return acp.CreateTerminalResponse{}, err
	}
	return acp.CreateTerminalResponse{TerminalId: term.sh.ID()}, nil
}

// startTerminal runs Bash for a terminal/create whose script is checked.
func (t *turn) startTerminal(ctx context.Context, ts *terminals, script string, limit int) (*terminal, error) {
	args, _ := json.Marshal(shell.BashArgs{Command: script, RunInBackground: true, Description: "terminal of the external agent " + t.n.cfg.Name})
	call := tool.Call{ID: "acpterm_" + strconv.FormatInt(fsCalls.Add(1), 10), Name: shell.Bash, Args: args, SessionID: t.inv.Session.ID, MessageID: t.cp.message()}
	info := agent.ToolInfo{Agent: t.n.cfg.Name, SessionID: t.inv.Session.ID, ToolName: shell.Bash, CallID: call.ID, Input: slices.Clone(args)}
	hooks, _ := t.inv.Runtime.Lifecycle().(agent.Hooks)
	if hooks != nil {
		d := hooks.PreTool(ctx, info)
		if !d.Allows() {
			return nil, acp.NewInternalError(map[string]any{"error": fmt.Sprintf("Bash %q denied: %s", script, d.Reason)})
		}
		if len(d.UpdatedInput) > 0 {
			// A hook's command, still a terminal: in the background.
			var in shell.BashArgs
			if err := json.Unmarshal(d.UpdatedInput, &in); err != nil {
				return nil, acp.NewInternalError(map[string]any{"error": "a tools/pre-execute hook gave Bash an input it cannot read: " + err.Error()})
			}
			in.RunInBackground = true
			call.Args, _ = json.Marshal(in)
			info.Input = slices.Clone(call.Args)
		}
	}
	res := tool.Run(ctx, ts.bash, call)
	id, _ := res.Metadata["shell_id"].(string)
	if hooks != nil {
		res = hooks.PostTool(ctx, info, res)
	}
	if res.IsError || id == "" {
		return nil, acp.NewInternalError(map[string]any{"error": res.Content})
	}
	sh, ok := ts.shells.Background(id, t.inv.Session.ID)
	if !ok {
		return nil, acp.NewInternalError(map[string]any{"error": "the terminal's shell " + id + " is gone"})
	}
	return &terminal{sh: sh, limit: limit, call: call.ID}, nil
}

// cwd is the workspace of a terminal's cwd: a directory inside the
// member's.
func (t *turn) cwd(dir string) (*workspace.Workspace, error) {
	abs, err := t.n.ws.Resolve(dir)
	if err != nil {
		return nil, err
	}
	return workspace.New(abs)
}

// reserve counts a terminal about to be made against maxTerminals.
func (ts *terminals) reserve() error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return errors.New("the session's terminals are closed")
	}
	if len(ts.byID)+ts.reserved >= maxTerminals {
		return fmt.Errorf("%d terminals of this session are not released, the most allowed: release one (terminal/release)", maxTerminals)
	}
	ts.reserved++
	return nil
}

// settle ends a reservation with the terminal made, if one was.
func (ts *terminals) settle(term *terminal) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.reserved--
	if term != nil && !ts.closed {
		ts.byID[term.sh.ID()] = term
	}
}

// get is the terminal of id, not released.
func (ts *terminals) get(id string) (*terminal, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if term, ok := ts.byID[id]; ok {
		return term, nil
	}
	return nil, acp.NewInvalidParams(map[string]any{"error": "no terminal " + id + " in this session (never made, or released)"})
}

// release forgets the terminal of id.
func (ts *terminals) release(id string) (*terminal, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	term, ok := ts.byID[id]
	if !ok {
		return nil, acp.NewInvalidParams(map[string]any{"error": "no terminal " + id + " in this session (never made, or released)"})
	}
	delete(ts.byID, id)
	return term, nil
}

// lookupTerminal is the session's terminal of id.
func (t *turn) lookupTerminal(id string) (*terminal, error) {
	t.mu.Lock()
	ts := t.terms
	t.mu.Unlock()
	if ts == nil {
		return nil, acp.NewInvalidParams(map[string]any{"error": "no terminal " + id + " in this session (never made, or released)"})
	}
	return ts.get(id)
}

// output is the terminal's output so far (its last limit bytes), whether
// some was cut, and its exit status once it has ended.
func (term *terminal) output(ctx context.Context) acp.TerminalOutputResponse {
	ended, code, sig := term.sh.Exit() // first: once ended, the output taken next is all of it
	data, dropped := term.sh.Take(ctx)
	term.mu.Lock()
	defer term.mu.Unlock()
	term.buf = append(term.buf, data...)
	if dropped > 0 {
		term.truncated = true
	}
	if n := len(term.buf) - term.limit; n > 0 {
		for n < len(term.buf) && !utf8.RuneStart(term.buf[n]) {
			n++
		}
		term.buf = append(term.buf[:0], term.buf[n:]...)
		term.truncated = true
	}
	res := acp.TerminalOutputResponse{Output: strings.ToValidUTF8(string(term.buf), "\uFFFD"), Truncated: term.truncated}
	if ended {
		res.ExitStatus = exitStatus(code, sig)
	}
	return res
}

// wait waits for the terminal's command to end.
func (term *terminal) wait(ctx context.Context) (acp.WaitForTerminalExitResponse, error) {
	select {
	case <-term.sh.Done():
	case <-ctx.Done():
		return acp.WaitForTerminalExitResponse{}, acp.NewInternalError(map[string]any{"error": "stopped waiting: " + context.Cause(ctx).Error()})
	}
	_, code, sig := term.sh.Exit()
	st := exitStatus(code, sig)
	return acp.WaitForTerminalExitResponse{ExitCode: st.ExitCode, Signal: st.Signal}, nil
}

// exitStatus is a shell's end as ACP says it: the signal that ended it,
// else its exit code (neither when unknown).
func exitStatus(code int, sig string) *acp.TerminalExitStatus {
	st := &acp.TerminalExitStatus{}
	switch {
	case sig != "":
		st.Signal = &sig
	case code >= 0:
		st.ExitCode = &code
	}
	return st
}

// terminalScript is the command line of a terminal/create for /bin/sh
// -c: the env as exports, then the command as the agent wrote it (a
// command line, as editors take it), then each argument as one quoted
// word.
func terminalScript(req acp.CreateTerminalRequest) (string, error) {
	var b strings.Builder
	for _, e := range req.Env {
		if !isVarName(e.Name) {
			return "", fmt.Errorf("env: %q is not a variable name", e.Name)
		}
		b.WriteString("export " + e.Name + "=" + shellQuote(e.Value) + "\n")
	}
	b.WriteString(req.Command)
	for _, a := range req.Args {
		b.WriteString(" " + shellQuote(a))
	}
	s := b.String()
	switch {
	case strings.TrimSpace(req.Command) == "":
		return "", errors.New("command is empty")
	case strings.IndexByte(s, 0) >= 0:
		return "", errors.New("the command, an argument or a variable has a NUL byte")
	case len(s) > maxScriptBytes:
		return "", fmt.Errorf("the command line is %d bytes with its arguments and environment, more than %d", len(s), maxScriptBytes)
	}
	return s, nil
}

// isVarName reports whether s is a shell variable name.
func isVarName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// shellQuote quotes s as one word for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
