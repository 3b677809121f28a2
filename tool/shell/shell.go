package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

// Tool names (Claude Code's).
const (
	Bash       = "Bash"
	BashOutput = "BashOutput"
	KillShell  = "KillShell"
)

const (
	defaultTimeout = 120000 // ms
	maxTimeout     = 600000 // ms
	// maxRunning bounds the background shells running at once per Toolset.
	maxRunning = 16
	// maxFinished bounds the finished background shells kept for a last
	// BashOutput; the oldest are forgotten beyond.
	maxFinished = 64
	// bgBufferBytes bounds the unread output kept per background shell.
	bgBufferBytes = 1 << 20
)

// Grace periods (variables for tests).
var (
	// termGrace is how long a process tree has between SIGTERM and
	// SIGKILL.
	termGrace = 2 * time.Second
	// readGrace is how long output is still read after the tree was
	// killed, for a process that escaped the tree and holds the output open.
	readGrace = 500 * time.Millisecond
)

// BashArgs is the input of Bash (Claude Code's fields).
type BashArgs struct {
	Command         string  `json:"command" jsonschema_description:"The shell command line to run with /bin/sh -c in the workspace root"`
	Timeout         float64 `json:"timeout,omitempty" jsonschema_description:"How long the command may run, in milliseconds: 120000 (2 minutes) when left out, 600000 at most"`
	Description     string  `json:"description,omitempty" jsonschema_description:"A few words saying what the command is for, shown to the user instead of the command line"`
	RunInBackground bool    `json:"run_in_background,omitempty" jsonschema_description:"Set to true to run this command in the background. Use BashOutput to read the output later and KillShell to stop it."`
}

// BashOutputArgs is the input of BashOutput.
type BashOutputArgs struct {
	BashID string `json:"bash_id" jsonschema_description:"The id Bash returned for the background command (bash_N)"`
	Filter string `json:"filter,omitempty" jsonschema_description:"Optional regular expression: only output lines matching it are shown. Lines not matching are no longer available to read."`
}

// KillShellArgs is the input of KillShell.
type KillShellArgs struct {
	ShellID string `json:"shell_id" jsonschema_description:"The id of the background command to stop (bash_N)"`
}

const bashDescription = `Executes a shell command (/bin/sh -c) in the workspace root directory and returns its combined stdout and stderr followed by its exit code ("Exit code: N" on the last line).

- timeout is in milliseconds: default 120000 (2 minutes), at most 600000 (10 minutes). At the timeout the command and every process it started are killed.
- Every call starts a fresh shell: cd and variables do not carry over to the next call. Processes the command leaves running are killed when it ends.
- Output longer than 30000 characters is cut in the middle (the result says how much).
- Set run_in_background to true for long-running commands (servers, watchers, long builds): the call returns at once with a shell ID; read new output with BashOutput and stop the command with KillShell.
- Give a short description of what the command does.`

const bashOutputDescription = `Retrieves the output of a background shell started with Bash run_in_background: only the output produced since the last BashOutput of that shell, followed by its status (running, exited with code N, or killed). An optional filter (a regular expression) keeps only matching lines.`

const killShellDescription = `Kills a background shell started with Bash run_in_background, with every process it started, by its ID.`

// Toolset is the execution toolset: Bash, BashOutput and KillShell over
// one workspace, with the background shells its calls started. It is safe
// for concurrent use.
type Toolset struct {
	ws *workspace.Workspace

	closing context.Context // done once Close began
	close   context.CancelFunc

	mu       sync.Mutex
	closed   bool
	wg       sync.WaitGroup // foreground calls and background shells in flight
	shells   map[string]*bgShell
	finished []*bgShell // finished background shells, oldest first
	nextID   int
	running  int

	envFile func(context.Context) string // SourceEnvFile
}

// New returns the execution toolset of ws (the default workspace: a run's
// context may name another, see workspace.WithWorkspace).
func New(ws *workspace.Workspace) *Toolset {
	ctx, cancel := context.WithCancel(context.Background())
	return &Toolset{ws: ws, closing: ctx, close: cancel, shells: map[string]*bgShell{}}
}

// SourceEnvFile makes Bash source the file fn names for a call's ctx
// before each command (none when fn returns ""): the session's environment
// that Claude Code's SessionStart hooks export through CLAUDE_ENV_FILE
// (hook.Registry.ShellEnvFile). Call it before the tools are used.
func (t *Toolset) SourceEnvFile(fn func(context.Context) string) { t.envFile = fn }

// script is the shell text that runs command: the command itself, after
// the session's environment file when there is one. The file is sourced
// through `command .` so that an error in it does not end the shell (a
// plain `.` is a special builtin whose errors would), and its output is
// dropped: only the command's own output is the result.
func (t *Toolset) script(ctx context.Context, command string) string {
	if t.envFile == nil {
		return command
	}
	f := t.envFile(ctx)
	if f == "" {
		return command
	}
	return "command . " + shellQuote(f) + " >/dev/null 2>&1 || :\n" + command
}

// shellQuote quotes s as one word for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Tools returns Bash, BashOutput and KillShell.
func (t *Toolset) Tools() []tool.Tool {
	return []tool.Tool{
		tool.WithKind(tool.WithTitle(tool.New(Bash, bashDescription, t.bash), title(bashTitle)), tool.KindExecute),
		tool.WithKind(tool.WithTitle(tool.New(BashOutput, bashOutputDescription, t.bashOutput),
			title(func(a BashOutputArgs) string { return shellTitle("Output of ")(a.BashID) })), tool.KindExecute),
		tool.WithKind(tool.WithTitle(tool.New(KillShell, killShellDescription, t.killShell),
			title(func(a KillShellArgs) string { return shellTitle("Kill ")(a.ShellID) })), tool.KindExecute),
	}
}

// Close kills every background shell (its whole process tree) and waits
// for them, and for the foreground commands in flight, which it cancels.
// Later calls get an error result. Close may be called more than once.
func (t *Toolset) Close() error {
	t.mu.Lock()
	t.closed = true
	shells := make([]*bgShell, 0, len(t.shells))
	for _, s := range t.shells {
		shells = append(shells, s)
	}
	t.mu.Unlock()
	t.close()
	var wg sync.WaitGroup
	errs := make([]error, len(shells))
	for i, s := range shells {
		wg.Go(func() { errs[i] = s.stop() })
	}
	wg.Wait()
	t.wg.Wait()
	return errors.Join(errs...)
}

// enter registers a call in flight; false once the toolset is closed.
func (t *Toolset) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	return true
}

var errClosed = tool.Errorf("the shell tools are closed (the pool is shutting down)")

// title reads a call's arguments as A and names the call with name (""
// for the default title).
func title[A any](name func(A) string) func(tool.Call) string {
	return func(call tool.Call) string {
		var a A
		_ = json.Unmarshal(call.Args, &a)
		return name(a)
	}
}

// bashTitle is the description when given, else the command's first line.
func bashTitle(a BashArgs) string {
	if d := strings.TrimSpace(a.Description); d != "" {
		return d
	}
	return firstLine(a.Command, 80)
}

func shellTitle(verb string) func(id string) string {
	return func(id string) string {
		if id == "" {
			return ""
		}
		return verb + id
	}
}

// timeoutOf turns the timeout argument (ms) into a duration, with a note
// when it was clamped.
func timeoutOf(ms float64) (int, string) {
	switch {
	case ms <= 0:
		return defaultTimeout, ""
	case ms > maxTimeout:
		return maxTimeout, fmt.Sprintf("The timeout of %.0f ms is above the maximum; %d ms was used.", ms, maxTimeout)
	case ms < 1:
		return 1, ""
	}
	return int(ms), ""
}

// bash runs the Bash tool.
func (t *Toolset) bash(ctx context.Context, call tool.Call, a BashArgs) (tool.Result, error) {
	if strings.TrimSpace(a.Command) == "" {
		return tool.Errorf("command is required"), nil
	}
	ws := workspace.From(ctx, t.ws)
	if ws == nil {
		return tool.Errorf("no workspace to run the command in"), nil
	}
	if a.RunInBackground {
		return t.startBackground(ctx, call, ws.Root(), a.Command, t.script(ctx, a.Command)), nil
	}
	timeoutMS, note := timeoutOf(a.Timeout)
	if !t.enter() {
		return errClosed, nil
	}
	defer t.wg.Done()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(t.closing, cancel)()
	var r run
	if term := workspace.TerminalFrom(ctx); term != nil {
		r = runTerminal(ctx, runCtx, term, ws.Root(), t.script(ctx, a.Command), timeoutMS)
	} else {
		r = runLocal(runCtx, ws.Root(), t.script(ctx, a.Command), timeoutMS)
	}
	if note != "" {
		r.notes = append([]string{note}, r.notes...)
	}
	return r.result(), nil
}
