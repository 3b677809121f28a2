package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agentpool/agentpool/internal/proctree"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

// terminalShell runs commands in a front end's terminal.
const terminalShell = "/bin/sh"

// cleanupTimeout bounds each terminal request made after a command ended
// (kill, output, release), even when the call's context is done.
const cleanupTimeout = 5 * time.Second

// run is how one foreground command ran.
type run struct {
	output     string
	cut        int    // characters cut from the middle of output
	code       int    // exit code, 128+N for signal N; -1 unknown
	signal     string // the signal that ended it, if one did
	timeoutMS  int
	timedOut   bool
	cancelled  bool
	notes      []string
	terminalID string
	err        error // it could not be started
}

// result renders a run for the model: the output, notes, and the exit code
// on the last line.
func (r run) result() tool.Result {
	md := map[string]any{"exit_code": r.code, "truncated": r.cut > 0, "timed_out": r.timedOut}
	if r.cancelled {
		md["cancelled"] = true
	}
	if r.terminalID != "" {
		md["terminal_id"] = r.terminalID
	}
	if r.err != nil {
		res := tool.Errorf("Could not run the command: %v", r.err)
		res.Metadata = md
		return res
	}
	var b strings.Builder
	out := strings.TrimRight(r.output, "\n")
	if out == "" {
		out = "(no output)"
	}
	b.WriteString(out)
	b.WriteString("\n\n")
	for _, n := range r.notes {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	if r.cut > 0 {
		fmt.Fprintf(&b, "Output truncated: %d characters cut from the middle (the first and last %d are shown).\n", r.cut, maxOutputChars/2)
	}
	if r.timedOut {
		fmt.Fprintf(&b, "Command killed after timeout of %d ms.\n", r.timeoutMS)
	}
	if r.cancelled {
		b.WriteString("Command cancelled; it was killed.\n")
	}
	b.WriteString(exitLine(r.code, r.signal))
	if r.cut > 0 {
		md["cut_chars"] = r.cut
	}
	return tool.Result{Content: b.String(), IsError: r.timedOut || r.cancelled, Metadata: md}
}

func exitLine(code int, signal string) string {
	switch {
	case code < 0 && signal != "":
		return "Exit code: unknown (terminated by " + signal + ")"
	case code < 0:
		return "Exit code: unknown"
	case signal != "":
		return fmt.Sprintf("Exit code: %d (terminated by %s)", code, signal)
	}
	return fmt.Sprintf("Exit code: %d", code)
}

// startLocal starts command as a process tree (see proctree) with stdout
// and stderr on one pipe (so their order is kept); the caller reads r and
// must close it, and end the tree.
func startLocal(root, command string) (*exec.Cmd, *proctree.Tree, *os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	cmd := exec.Command(shellPath, "-c", command)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = pw, pw
	tree := proctree.New(cmd)
	err = tree.Start()
	pw.Close() // the shell has its copy
	if err != nil {
		pr.Close()
		return nil, nil, nil, err
	}
	return cmd, tree, pr, nil
}

// runLocal runs command here. At the timeout, or when ctx ends, the whole
// process tree gets SIGTERM, then SIGKILL after termGrace; after the
// shell exits what is left of its tree is killed the same way.
func runLocal(ctx context.Context, root, command string, timeoutMS int) run {
	r := run{code: -1, timeoutMS: timeoutMS}
	cmd, tree, pr, err := startLocal(root, command)
	if err != nil {
		r.err = err
		return r
	}
	c := newCapture(maxOutputChars)
	readDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(c, pr)
		readDone <- err
	}()

	exited := make(chan struct{})
	watched := make(chan struct{})
	timer := time.NewTimer(time.Duration(timeoutMS) * time.Millisecond)
	defer timer.Stop()
	go func() {
		defer close(watched)
		select {
		case <-exited:
			return
		case <-timer.C:
			r.timedOut = true
		case <-ctx.Done():
			r.cancelled = true
		}
		tree.Signal(syscall.SIGTERM)
		grace := time.NewTimer(termGrace)
		defer grace.Stop()
		select {
		case <-exited:
		case <-grace.C:
			tree.Kill()
		}
	}()
	_ = tree.Wait()
	close(exited)
	<-watched
	if cmd.ProcessState != nil {
		r.code, r.signal = exitStatus(cmd.ProcessState)
	}
	if err := endTree(tree); err != nil {
		r.notes = append(r.notes, "Some processes the command started could not be killed: "+err.Error())
	}
	_ = pr.SetReadDeadline(time.Now().Add(readGrace))
	if err := <-readDone; errors.Is(err, os.ErrDeadlineExceeded) {
		r.notes = append(r.notes, "A process that escaped the command's process tree kept its output open; reading stopped there.")
	}
	pr.Close()
	r.output, r.cut = c.text()
	return r
}

// endTree ends what is left of a tree whose shell exited: SIGTERM, then
// SIGKILL to what still runs after termGrace (End), which also reaps the
// processes this one adopted.
func endTree(tree *proctree.Tree) error {
	if tree.Alive() {
		tree.Signal(syscall.SIGTERM)
		waitDead(tree, termGrace)
	}
	return tree.End()
}

// waitDead polls until no process of tree runs, for at most d.
func waitDead(tree *proctree.Tree, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for sleep := time.Millisecond; ; sleep = min(2*sleep, 50*time.Millisecond) {
		if !tree.Alive() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(sleep)
	}
}

// runTerminal runs command in a front end's terminal: Start, Wait with the
// timeout (Kill at the timeout or when runCtx ends), Output, Release. The
// requests after the end use callCtx's values without its cancellation.
func runTerminal(callCtx, runCtx context.Context, term workspace.Terminal, root, command string, timeoutMS int) run {
	r := run{code: -1, timeoutMS: timeoutMS}
	proc, err := term.Start(runCtx, workspace.TerminalRequest{
		Command: terminalShell, Args: []string{"-c", command}, Cwd: root, OutputByteLimit: maxOutputChars,
	})
	if err != nil {
		r.err = fmt.Errorf("the terminal could not start it: %w", err)
		return r
	}
	r.terminalID = proc.ID()
	wctx, cancel := context.WithTimeout(runCtx, time.Duration(timeoutMS)*time.Millisecond)
	st, werr := proc.Wait(wctx)
	cancel()
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(callCtx), cleanupTimeout)
	defer ccancel()
	var exit *workspace.ExitStatus
	if werr == nil {
		exit = &st
	} else {
		switch {
		case runCtx.Err() != nil:
			r.cancelled = true
		case wctx.Err() != nil:
			r.timedOut = true
		default:
			r.notes = append(r.notes, "Waiting for the terminal failed: "+werr.Error())
		}
		if err := proc.Kill(cctx); err != nil {
			r.notes = append(r.notes, "Killing the command in the terminal failed: "+err.Error())
		}
	}
	out, truncated, oexit, oerr := proc.Output(cctx)
	if oerr != nil {
		r.notes = append(r.notes, "Reading the terminal's output failed: "+oerr.Error())
	}
	if exit == nil {
		exit = oexit
	}
	_ = proc.Release(cctx)
	if truncated {
		r.notes = append(r.notes, fmt.Sprintf("The terminal kept only the last %d bytes of the output.", maxOutputChars))
	}
	r.output, r.cut = capText(out, maxOutputChars)
	r.code, r.signal = terminalStatus(exit)
	return r
}

// terminalStatus turns a terminal's exit status into a shell-style exit
// code and signal name.
func terminalStatus(e *workspace.ExitStatus) (int, string) {
	switch {
	case e == nil:
		return -1, ""
	case e.Code != nil:
		return *e.Code, ""
	case e.Signal != "":
		name := strings.ToUpper(e.Signal)
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		if n, ok := signalNumbers[name]; ok {
			return 128 + n, name
		}
		return -1, e.Signal
	}
	return -1, ""
}
