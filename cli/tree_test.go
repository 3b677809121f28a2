package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

func TestUseTree(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	cases := []struct {
		name     string
		terminal bool
		getenv   func(string) string
		want     bool
	}{
		{"terminal", true, env("TERM", "xterm-256color"), true},
		{"not a terminal", false, env("TERM", "xterm-256color"), false},
		{"NO_COLOR", true, env("TERM", "xterm", "NO_COLOR", "1"), false},
		{"TERM=dumb", true, env("TERM", "dumb"), false},
	}
	for _, c := range cases {
		if got := useTree(c.terminal, c.getenv); got != c.want {
			t.Errorf("%s: useTree = %v, want %v", c.name, got, c.want)
		}
	}
}

var sessionLine = regexp.MustCompile(`session ses_\w+ · completed · \d+ in / \d+ out tokens`)

// TestRunPlainLinesWhenNotTerminal: with stderr a pipe the run's progress
// is appended lines (no cursor movement) ending with the session line, and
// stdout holds only the answer.
func TestRunPlainLinesWhenNotTerminal(t *testing.T) {
	ex, _ := filepath.Abs("../examples/nested.yaml")
	r := runCLI(t, t.TempDir(), "run", "-c", ex, "--db", ":memory:", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "\x1b[") {
		t.Errorf("escape sequences on a stderr that is no terminal: %q", r.stderr)
	}
	for _, want := range []string{"🚀 **`squad`**: Research and write", "    🚀 **`checker`**: ask checker", "✓ `squad` completed"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if !sessionLine.MatchString(lines[len(lines)-1]) {
		t.Errorf("the last stderr line is not the session line: %q", lines[len(lines)-1])
	}
	if want := "Done: the squad researched nested teams, drafted a note and had both checked.\n"; r.stdout != want {
		t.Errorf("stdout = %q, want only the answer", r.stdout)
	}
}

// slowNested is examples/nested.yaml with every model slowed down, so that
// the tree is drawn a few times while the run goes on.
func slowNested(t *testing.T, delay string) string {
	t.Helper()
	b, err := os.ReadFile("../examples/nested.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "type: scripted\n", "type: scripted\n      delay: "+delay+"\n")
	s = strings.ReplaceAll(s, "type: test\n", "type: test\n      delay: "+delay+"\n")
	s = strings.ReplaceAll(s, "{type: test, ", "{type: test, delay: "+delay+", ")
	if strings.Count(s, "delay:") != 5 {
		t.Fatalf("the example changed: %d models slowed, want 5", strings.Count(s, "delay:"))
	}
	path := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// ptyRun is a run of the binary whose stdin and stderr are a pseudo
// terminal and whose stdout is a pipe.
type ptyRun struct {
	cmd    *exec.Cmd
	ptmx   *os.File
	stdout bytes.Buffer
	mu     sync.Mutex
	screen bytes.Buffer  // all the terminal received
	read   chan struct{} // closed when the terminal is read out
	more   chan struct{} // a token after each read since the last look (waitFor)
}

func startPTY(t *testing.T, env []string, args ...string) *ptyRun {
	t.Helper()
	return startPTYWith(t, env, false, args...)
}

// startPTYWith starts a run on a pseudo terminal; with stdoutTTY its
// stdout is the terminal too (the output of `sessions tree --watch`).
func startPTYWith(t *testing.T, env []string, stdoutTTY bool, args ...string) *ptyRun {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 120}); err != nil {
		t.Fatal(err)
	}
	r := &ptyRun{ptmx: ptmx, read: make(chan struct{}), more: make(chan struct{}, 1)}
	r.cmd = exec.Command(cliBinary(t), args...)
	r.cmd.Dir = t.TempDir()
	r.cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir(), "NO_COLOR=", "TERM=xterm-256color")
	r.cmd.Env = append(r.cmd.Env, env...)
	r.cmd.Stdin, r.cmd.Stderr, r.cmd.Stdout = tty, tty, &r.stdout
	if stdoutTTY {
		r.cmd.Stdout = tty
	}
	// Its own session with the terminal as controlling terminal, so that
	// ^C typed on it is SIGINT to the run.
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go func() {
		defer close(r.read)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			r.mu.Lock()
			r.screen.Write(buf[:n])
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
			if err != nil {
				return // EIO once the run closed the terminal
			}
		}
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		ptmx.Close()
	})
	return r
}

// wait waits for the run to end and the terminal to be read out.
func (r *ptyRun) wait(t *testing.T) (code int, screen string) {
	t.Helper()
	err := r.cmd.Wait()
	<-r.read
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return code, r.screen.String()
}

// waitFor waits until the terminal received s (no deadline of its own:
// the test's timeout bounds it).
func (r *ptyRun) waitFor(s string) {
	for {
		r.mu.Lock()
		ok := strings.Contains(r.screen.String(), s)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.read:
			return
		case <-r.more: // the terminal got more: look again
		}
	}
}

// cursorUp is CSI n A: the renderer going back up to redraw lines.
var cursorUp = regexp.MustCompile(`\x1b\[\d*A`)

func TestRunTreeInPseudoTerminal(t *testing.T) {
	r := startPTY(t, nil, "run", "-c", slowNested(t, "30ms"), "--db", ":memory:", "hi")
	code, screen := r.wait(t)
	if code != 0 {
		t.Fatalf("exit %d:\n%q", code, screen)
	}
	if !cursorUp.MatchString(screen) {
		t.Errorf("no in-place redraw (cursor up) on the terminal:\n%q", screen)
	}
	plain := stripCSI(screen)
	for _, want := range []string{"calling task", "squad [team]", "checker [worker]", "✓ lead · completed · 1 tool use"} {
		if !strings.Contains(plain, want) {
			t.Errorf("the terminal never showed %q:\n%s", want, plain)
		}
	}
	if !sessionLine.MatchString(plain) || strings.Count(plain, "session ses_") != 1 {
		t.Errorf("want one session line at the end:\n%s", plain)
	}
	if strings.Contains(screen, "🚀") {
		t.Errorf("the plain lines are drawn on a terminal too:\n%s", plain)
	}
	if want := "Done: the squad researched nested teams, drafted a note and had both checked.\n"; r.stdout.String() != want {
		t.Errorf("stdout = %q, want only the answer", r.stdout.String())
	}
}

// TestRunPlainLinesOnDumbTerminal: NO_COLOR and TERM=dumb keep the
// appended lines on a terminal.
func TestRunPlainLinesOnDumbTerminal(t *testing.T) {
	for _, env := range []string{"NO_COLOR=1", "TERM=dumb"} {
		t.Run(env, func(t *testing.T) {
			r := startPTY(t, []string{env}, "run", "-c", slowNested(t, "1ms"), "--db", ":memory:", "hi")
			code, screen := r.wait(t)
			if code != 0 {
				t.Fatalf("exit %d:\n%q", code, screen)
			}
			if cursorUp.MatchString(screen) || strings.Contains(screen, "\x1b[J") {
				t.Errorf("cursor movement with %s:\n%q", env, screen)
			}
			if !strings.Contains(screen, "🚀 **`squad`**") || !sessionLine.MatchString(screen) {
				t.Errorf("no plain lines and session line with %s:\n%s", env, screen)
			}
		})
	}
}

// TestRunTreeCtrlC: ^C typed on the terminal cancels the run; the tree
// ends on one summary, every session aborted, and the session line.
func TestRunTreeCtrlC(t *testing.T) {
	r := startPTY(t, nil, "run", "-c", slowNested(t, "300ms"), "--db", ":memory:", "hi")
	r.waitFor("[worker]")
	if _, err := r.ptmx.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	code, screen := r.wait(t)
	if code != 130 {
		t.Fatalf("exit %d, want 130:\n%q", code, screen)
	}
	plain := stripCSI(screen)
	last := plain[strings.LastIndex(plain, "⊘ lead"):]
	if !strings.Contains(last, "⊘ lead · aborted") || !strings.Contains(last, "⊘ squad [team] · aborted") {
		t.Errorf("the final frame is not the aborted summary:\n%s", last)
	}
	if !regexp.MustCompile(`session ses_\w+ · aborted`).MatchString(last) || strings.Count(plain, "session ses_") != 1 {
		t.Errorf("want one session line, aborted:\n%s", last)
	}
	if r.stdout.Len() != 0 {
		t.Errorf("stdout of a cancelled run = %q", r.stdout.String())
	}
}

// stripCSI drops the terminal's control sequences and carriage returns.
func stripCSI(s string) string {
	s = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[=>M]|\r`).ReplaceAllString(s, "")
	return s
}

// TestSessionsTreeDrawsLikeRun: `sessions tree ID` draws a stored run with
// the live view's renderer, in its final state: every session expanded,
// with how it was spawned, how it ended, and its id.
func TestSessionsTreeDrawsLikeRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	ex, _ := filepath.Abs("../examples/nested.yaml")
	r := runCLI(t, dir, "run", "-c", ex, "--db", db, "hi")
	if r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	id := regexp.MustCompile(`session (ses_\w+)`).FindStringSubmatch(r.stderr)
	if id == nil {
		t.Fatalf("no session id on stderr: %q", r.stderr)
	}
	tr := runCLI(t, dir, "sessions", "tree", "--db", db, id[1])
	if tr.code != 0 {
		t.Fatalf("sessions tree: exit %d: %s", tr.code, tr.stderr)
	}
	lines := strings.Split(strings.TrimSpace(tr.stdout), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^✓ lead · completed · 1 tool use · 460 tok \(own 178\) · \S+ · ` + id[1] + `$`),
		regexp.MustCompile(`^└─ ✓ squad \[team\] · completed · 282 tok \(own 0\) · \S+ · ses_\w+$`),
		regexp.MustCompile(`^   [├└]─ ✓ (pipeline \[team\]|scout \[member\]) · completed`),
	}
	if len(lines) != 8 {
		t.Fatalf("want 8 sessions, one line each:\n%s", tr.stdout)
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d = %q, want %s", i, lines[i], re)
		}
	}
	if n := strings.Count(tr.stdout, "✓ checker [worker] · completed"); n != 2 {
		t.Errorf("want both checkers, as workers:\n%s", tr.stdout)
	}
}

// TestRunTreeApprovalQuestion: a tool that asks for approval gets its
// question on the terminal while the tree is drawn; the answer typed there
// runs the tool and the tree goes on to its final frame.
func TestRunTreeApprovalQuestion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ask.yaml")
	os.WriteFile(path, []byte(`agents:
  dev:
    tools: [execution]
    model:
      type: scripted
      delay: 20ms
      turns:
        - tool_calls: [{name: Bash, args: {command: echo approved-run}}]
        - text: ran it
`), 0o644)
	r := startPTY(t, nil, "run", "-c", path, "--db", ":memory:", "--workspace", t.TempDir(), "go")
	r.waitFor("[y]es / [a]lways / [n]o")
	if _, err := r.ptmx.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	code, screen := r.wait(t)
	plain := stripCSI(screen)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, plain)
	}
	if !strings.Contains(plain, "? dev wants to run Bash echo approved-run\n    command: echo approved-run\n") {
		t.Errorf("no question on the terminal:\n%s", plain)
	}
	if !strings.Contains(plain, "✓ dev · completed · 1 tool use") || !sessionLine.MatchString(plain) {
		t.Errorf("no final frame after the answer:\n%s", plain)
	}
	if r.stdout.String() != "ran it\n" {
		t.Errorf("stdout = %q", r.stdout.String())
	}
}

// TestSessionsTreeWatch: `sessions tree --watch` follows a run of another
// process: on a terminal redrawn in place until the run ends, through a
// pipe printed once, in its final state.
func TestSessionsTreeWatch(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	run := exec.Command(cliBinary(t), "run", "-c", slowNested(t, "40ms"), "--db", db, "hi")
	run.Dir = dir
	run.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	var runErr bytes.Buffer
	run.Stderr = &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Process.Kill() })
	var id string
	for id == "" {
		l := runCLI(t, dir, "sessions", "list", "--db", db, "--roots", "--json")
		var roots []struct{ ID string }
		if json.Unmarshal([]byte(l.stdout), &roots) == nil && len(roots) > 0 {
			id = roots[0].ID
		}
	}
	w := startPTYWith(t, nil, true, "sessions", "tree", "--watch", "--db", db, id)
	piped := make(chan cliResult, 1)
	go func() { piped <- runCLI(t, dir, "sessions", "tree", "--watch", "--db", db, id) }()
	if err := run.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, runErr.String())
	}
	code, screen := w.wait(t)
	if code != 0 {
		t.Fatalf("watch on a terminal: exit %d:\n%q", code, screen)
	}
	plain := stripCSI(screen)
	if !strings.Contains(plain, "✓ lead · completed · 1 tool use") || !strings.Contains(plain, id) {
		t.Errorf("the watch did not end on the final tree:\n%s", plain)
	}
	p := <-piped
	if p.code != 0 || strings.Contains(p.stdout, "\x1b[") || !strings.HasPrefix(p.stdout, "✓ lead · completed") ||
		strings.Count(p.stdout, "\n") != 8 {
		t.Errorf("watch through a pipe (exit %d) is not the final tree once:\n%s", p.code, p.stdout)
	}
}
