package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentpool/agentpool/internal/proctree"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

// bgShell is a background shell: a local process tree or a command in a
// front end's terminal.
type bgShell struct {
	t       *Toolset
	id      string
	session string
	command string // as the model gave it (shown)
	script  string // what runs (Toolset.script)

	// A local shell.
	cmd      *exec.Cmd
	tree     *proctree.Tree
	pr       *os.File
	readDone chan error

	// A shell in a front end's terminal.
	proc    workspace.TerminalProcess
	tctx    context.Context // ends the terminal requests of the shell
	tcancel context.CancelFunc
	pullMu  sync.Mutex
	prev    string // the terminal's output as last read
	gone    bool   // released (under pullMu)

	done     chan struct{} // closed once finished, all its output buffered
	appended chan struct{} // holds a token once output was added since it was last taken (the tests' notice)

	mu       sync.Mutex
	buf      []byte // output not yet returned by BashOutput
	dropped  int64  // bytes dropped from buf since the last read
	lost     bool   // the terminal's output could not be matched up
	exited   bool   // the local shell was waited for
	killed   bool   // by KillShell or Close
	finished bool
	code     int
	signal   string
	waitErr  error
}

// startBackground runs the Bash tool with run_in_background.
func (t *Toolset) startBackground(ctx context.Context, call tool.Call, root, command, script string) tool.Result {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return errClosed
	}
	if t.running >= maxRunning {
		t.mu.Unlock()
		return tool.Errorf("%d background shells are already running, the most allowed: stop one with %s or wait for one to finish.", maxRunning, KillShell)
	}
	t.running++
	t.wg.Add(1)
	t.nextID++
	s := &bgShell{t: t, id: fmt.Sprintf("bash_%d", t.nextID), session: call.SessionID, command: command, script: script, done: make(chan struct{}), appended: make(chan struct{}, 1), code: -1}
	t.mu.Unlock()

	var err error
	term := workspace.TerminalFrom(ctx)
	if term != nil {
		err = s.startTerminal(ctx, term, root)
	} else {
		err = s.startLocal(root)
	}
	if err != nil {
		t.mu.Lock()
		t.running--
		t.mu.Unlock()
		t.wg.Done()
		return tool.Errorf("Could not start the command: %v", err)
	}
	t.mu.Lock()
	t.shells[s.id] = s
	closed := t.closed
	t.mu.Unlock()
	if term != nil {
		go s.waitTerminal()
	} else {
		go s.waitLocal()
	}
	if closed {
		_ = s.stop()
		return errClosed
	}
	md := map[string]any{"shell_id": s.id, "background": true}
	if s.proc != nil {
		md["terminal_id"] = s.proc.ID()
	}
	return tool.Result{
		Content: fmt.Sprintf("Command running in background with ID: %s\nRead its new output with %s (bash_id %q); stop it with %s (shell_id %q).",
			s.id, BashOutput, s.id, KillShell, s.id),
		Metadata: md,
	}
}

func (s *bgShell) startLocal(root string) error {
	cmd, tree, pr, err := startLocal(root, s.script)
	if err != nil {
		return err
	}
	s.cmd, s.tree, s.pr = cmd, tree, pr
	s.readDone = make(chan error, 1)
	go func() {
		b := make([]byte, 32<<10)
		for {
			n, err := pr.Read(b)
			if n > 0 {
				s.append(b[:n])
			}
			if err != nil {
				s.readDone <- err
				return
			}
		}
	}()
	return nil
}

// waitLocal waits for the local shell, then kills what is left of its
// tree and reads the rest of its output.
func (s *bgShell) waitLocal() {
	_ = s.tree.Wait()
	code, sig := -1, ""
	if s.cmd.ProcessState != nil {
		code, sig = exitStatus(s.cmd.ProcessState)
	}
	s.mu.Lock()
	s.exited = true
	s.mu.Unlock()
	_ = endTree(s.tree)
	_ = s.pr.SetReadDeadline(time.Now().Add(readGrace))
	<-s.readDone
	s.pr.Close()
	s.finish(code, sig, nil)
}

func (s *bgShell) startTerminal(ctx context.Context, term workspace.Terminal, root string) error {
	s.tctx, s.tcancel = context.WithCancel(context.WithoutCancel(ctx))
	proc, err := term.Start(s.tctx, workspace.TerminalRequest{
		Command: terminalShell, Args: []string{"-c", s.script}, Cwd: root, OutputByteLimit: bgBufferBytes,
	})
	if err != nil {
		s.tcancel()
		return fmt.Errorf("the terminal could not start it: %w", err)
	}
	s.proc = proc
	return nil
}

// waitTerminal waits for the terminal's command, then reads the rest of
// its output and releases the terminal.
func (s *bgShell) waitTerminal() {
	st, err := s.proc.Wait(s.tctx)
	code, sig := -1, ""
	if err == nil {
		code, sig = terminalStatus(&st)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.tctx), cleanupTimeout)
	defer cancel()
	_ = s.pull(ctx)
	s.release(ctx)
	s.tcancel()
	s.finish(code, sig, err)
}

// pull appends the terminal's output produced since the last pull.
func (s *bgShell) pull(ctx context.Context) error {
	s.pullMu.Lock()
	defer s.pullMu.Unlock()
	if s.gone {
		return nil
	}
	out, _, _, err := s.proc.Output(ctx)
	if err != nil {
		return err
	}
	d, ok := newOutput(s.prev, out)
	s.prev = out
	if !ok {
		s.mu.Lock()
		s.lost = true
		s.mu.Unlock()
	}
	s.append([]byte(d))
	return nil
}

// newOutput returns what out, the terminal's output now, adds to prev, its
// output before. A terminal keeps only the end of a long output, so when
// out does not start with prev the longest end of prev that out starts
// with is looked for; false when there is none (then all of out is
// returned).
func newOutput(prev, out string) (string, bool) {
	if strings.HasPrefix(out, prev) {
		return out[len(prev):], true
	}
	k := min(len(out), 1024)
	head := out[:k]
	// Long overlaps: prev[d:] holds head (and is no longer than out); try
	// the first few candidates.
	for from, tries := max(1, len(prev)-len(out)), 0; tries < 64 && from < len(prev); tries++ {
		i := strings.Index(prev[from:], head)
		if i < 0 {
			break
		}
		d := from + i
		if strings.HasPrefix(out, prev[d:]) {
			return out[len(prev)-d:], true
		}
		from = d + 1
	}
	// Short overlaps: prev's end is shorter than head.
	for d := max(1, len(prev)-k+1); d < len(prev); d++ {
		if strings.HasPrefix(out, prev[d:]) {
			return out[len(prev)-d:], true
		}
	}
	return out, false
}

func (s *bgShell) release(ctx context.Context) {
	s.pullMu.Lock()
	defer s.pullMu.Unlock()
	if !s.gone {
		s.gone = true
		_ = s.proc.Release(ctx)
	}
}

// append adds output, dropping the oldest beyond bgBufferBytes.
func (s *bgShell) append(p []byte) {
	s.mu.Lock()
	s.buf = append(s.buf, p...)
	if len(s.buf) > 2*bgBufferBytes {
		s.trim()
	}
	s.mu.Unlock()
	select {
	case s.appended <- struct{}{}:
	default: // a token is already waiting
	}
}

// trim drops the oldest unread output beyond bgBufferBytes (s.mu held).
func (s *bgShell) trim() {
	if n := len(s.buf) - bgBufferBytes; n > 0 {
		s.dropped += int64(n)
		s.buf = append(s.buf[:0], s.buf[n:]...)
	}
}

// take returns the unread output and how much was dropped before it.
func (s *bgShell) take() ([]byte, int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trim()
	b, d, lost := s.buf, s.dropped, s.lost
	s.buf, s.dropped, s.lost = nil, 0, false
	return b, d, lost
}

// finish records the end of the shell and frees its running slot.
func (s *bgShell) finish(code int, sig string, err error) {
	s.mu.Lock()
	s.finished, s.code, s.signal, s.waitErr = true, code, sig, err
	s.mu.Unlock()
	t := s.t
	t.mu.Lock()
	t.running--
	t.finished = append(t.finished, s)
	for len(t.finished) > maxFinished {
		delete(t.shells, t.finished[0].id)
		t.finished = append(t.finished[:0], t.finished[1:]...)
	}
	t.mu.Unlock()
	close(s.done)
	t.wg.Done()
}

// stop kills the shell with its whole process tree (or its terminal
// command) and waits until it finished.
func (s *bgShell) stop() error {
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		return nil
	}
	exited := s.exited
	s.killed = !exited
	s.mu.Unlock()
	grace := time.NewTimer(termGrace)
	defer grace.Stop()
	if s.proc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		err := s.proc.Kill(ctx)
		select {
		case <-s.done:
		case <-grace.C:
			s.tcancel() // ends Wait
			<-s.done
		}
		return err
	}
	if !exited {
		s.tree.Signal(syscall.SIGTERM)
	}
	select {
	case <-s.done:
		return nil
	case <-grace.C:
	}
	s.mu.Lock()
	exited = s.exited
	s.mu.Unlock()
	if !exited {
		s.tree.Kill()
	}
	<-s.done
	return nil
}

// status describes the shell's state; finished means its output is
// complete.
func (s *bgShell) status() (text string, finished bool, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.finished:
		return "running", false, -1
	case s.killed:
		return "killed", true, s.code
	case s.signal != "":
		return "terminated by " + s.signal, true, s.code
	case s.waitErr != nil:
		return "ended, exit status unknown (" + s.waitErr.Error() + ")", true, s.code
	case s.code < 0:
		return "ended, exit status unknown", true, s.code
	}
	return fmt.Sprintf("exited with code %d", s.code), true, s.code
}

// lookup returns the shell id of session, or nil.
func (t *Toolset) lookup(id, session string) *bgShell {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.shells[strings.TrimSpace(id)]
	if s == nil || s.session != session {
		return nil
	}
	return s
}

// bashOutput runs the BashOutput tool.
func (t *Toolset) bashOutput(ctx context.Context, call tool.Call, a BashOutputArgs) (tool.Result, error) {
	s := t.lookup(a.BashID, call.SessionID)
	if s == nil {
		return tool.Errorf("No such shell: %s", a.BashID), nil
	}
	var re *regexp.Regexp
	if a.Filter != "" {
		var err error
		if re, err = regexp.Compile(a.Filter); err != nil {
			return tool.Errorf("Invalid filter: %v", err), nil
		}
	}
	var notes []string
	if s.proc != nil {
		if _, fin, _ := s.status(); !fin {
			pctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
			err := s.pull(pctx)
			cancel()
			if err != nil {
				notes = append(notes, "Reading the terminal's output failed: "+err.Error())
			}
		}
	}
	// The status first: once it says finished, the output taken next is
	// complete.
	st, fin, code := s.status()
	data, dropped, lost := s.take()
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d bytes of older output were dropped (more than %d bytes accumulated since the last read).", dropped, bgBufferBytes))
	}
	if lost {
		notes = append(notes, "The terminal dropped the start of its output; some output may be missing or repeated.")
	}
	out := clean(string(data))
	if re != nil {
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if out == "" {
			lines = nil
		}
		kept := lines[:0:0]
		for _, l := range lines {
			if re.MatchString(l) {
				kept = append(kept, l)
			}
		}
		notes = append(notes, fmt.Sprintf("Filter %q: %d of %d new lines shown.", a.Filter, len(kept), len(lines)))
		out = strings.Join(kept, "\n")
	}
	out, cut := capText(out, maxOutputChars)
	var b strings.Builder
	out = strings.TrimRight(out, "\n")
	if out == "" {
		out = "(no new output)"
	}
	b.WriteString(out)
	b.WriteString("\n\n")
	for _, n := range notes {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	if cut > 0 {
		fmt.Fprintf(&b, "Output truncated: %d characters cut from the middle (the first and last %d are shown).\n", cut, maxOutputChars/2)
	}
	b.WriteString("Status: " + st)
	md := map[string]any{"shell_id": s.id, "status": st, "truncated": cut > 0, "running": !fin}
	if fin {
		md["exit_code"] = code
	}
	if s.proc != nil {
		md["terminal_id"] = s.proc.ID()
	}
	return tool.Result{Content: b.String(), Metadata: md}, nil
}

// killShell runs the KillShell tool.
func (t *Toolset) killShell(ctx context.Context, call tool.Call, a KillShellArgs) (tool.Result, error) {
	s := t.lookup(a.ShellID, call.SessionID)
	if s == nil {
		return tool.Errorf("No such shell: %s", a.ShellID), nil
	}
	md := map[string]any{"shell_id": s.id}
	if st, fin, _ := s.status(); fin {
		md["status"] = st
		return tool.Result{Content: fmt.Sprintf("Shell %s is not running: %s.", s.id, st), Metadata: md}, nil
	}
	err := s.stop()
	st, _, _ := s.status()
	md["status"] = st
	msg := fmt.Sprintf("Successfully killed shell: %s (%s)", s.id, firstLine(s.command, 80))
	if st != "killed" {
		msg = fmt.Sprintf("Shell %s (%s) ended before it was killed: %s.", s.id, firstLine(s.command, 80), st)
	}
	if err != nil {
		msg += "\nThe terminal reported: " + err.Error()
	}
	return tool.Result{Content: msg, Metadata: md}, nil
}
