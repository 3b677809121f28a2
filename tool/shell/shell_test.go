//go:build unix

package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

// env is a Toolset over a temporary workspace, closed at the end of the
// test.
type env struct {
	t     *testing.T
	ws    *workspace.Workspace
	ts    *Toolset
	tools map[string]tool.Tool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := New(ws)
	t.Cleanup(func() {
		if err := ts.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	e := &env{t: t, ws: ws, ts: ts, tools: map[string]tool.Tool{}}
	for _, tl := range ts.Tools() {
		e.tools[tl.Info().Name] = tl
	}
	return e
}

func (e *env) callCtx(ctx context.Context, name, session string, args any) tool.Result {
	e.t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	return tool.Run(ctx, e.tools[name], tool.Call{ID: "c1", Name: name, Args: b, SessionID: session})
}

func (e *env) call(name string, args any) tool.Result {
	e.t.Helper()
	return e.callCtx(context.Background(), name, "s1", args)
}

// path is a file of the workspace.
func (e *env) path(name string) string { return filepath.Join(e.ws.Root(), name) }

// readPid waits for a file holding a pid (written by the command).
func (e *env) readPid(name string) int {
	e.t.Helper()
	line := func(b []byte) bool { return strings.HasSuffix(string(b), "\n") }
	if !proctreetest.WaitFile(e.path(name), 5*time.Second, line) {
		e.t.Fatalf("no pid in %s", name)
	}
	b, err := os.ReadFile(e.path(name))
	if err != nil {
		e.t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		e.t.Fatalf("%s: %v", name, err)
	}
	return pid
}

// gone fails the test unless process pid ends soon (its pidfd tells),
// reaping it if it is a zombie child of the test process, its subreaper.
func gone(t *testing.T, pid int) {
	t.Helper()
	if !proctreetest.WaitExit(pid, 3*time.Second) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d still exists", pid)
	}
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func TestToolsInfo(t *testing.T) {
	e := newEnv(t)
	var names []string
	for _, tl := range e.ts.Tools() {
		i := tl.Info()
		names = append(names, i.Name)
		if i.Kind != tool.KindExecute {
			t.Errorf("%s kind %q", i.Name, i.Kind)
		}
		if _, ok := tl.(tool.Titler); !ok {
			t.Errorf("%s is no Titler", i.Name)
		}
	}
	if got := strings.Join(names, ","); got != "Bash,BashOutput,KillShell" {
		t.Fatalf("tools %s", got)
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(e.tools[Bash].Info().Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"command", "timeout", "description", "run_in_background"} {
		if schema.Properties[p] == nil {
			t.Errorf("Bash schema lacks %s: %s", p, e.tools[Bash].Info().Parameters)
		}
	}
	if strings.Join(schema.Required, ",") != "command" {
		t.Errorf("Bash required %v", schema.Required)
	}
	title := func(name string, args any) string {
		b, _ := json.Marshal(args)
		return tool.Title(e.tools[name], tool.Call{Name: name, Args: b})
	}
	if got := title(Bash, map[string]any{"command": "ls", "description": "List files"}); got != "List files" {
		t.Errorf("title %q", got)
	}
	if got := title(Bash, map[string]any{"command": "go test ./...\necho done"}); got != "go test ./... …" {
		t.Errorf("title %q", got)
	}
	if got := title(Bash, map[string]any{"command": strings.Repeat("x", 200)}); utf8.RuneCountInString(got) != 80 {
		t.Errorf("title %q", got)
	}
	if got := title(KillShell, map[string]any{"shell_id": "bash_3"}); got != "Kill bash_3" {
		t.Errorf("title %q", got)
	}
}

func TestOutputAndExitCode(t *testing.T) {
	e := newEnv(t)
	r := e.call(Bash, BashArgs{Command: "echo out; echo err >&2; echo out2; exit 3"})
	if r.IsError {
		t.Fatalf("non-zero exit is an error result: %q", r.Content)
	}
	if !strings.HasPrefix(r.Content, "out\nerr\nout2\n") {
		t.Fatalf("output %q", r.Content)
	}
	if lastLine(r.Content) != "Exit code: 3" {
		t.Fatalf("last line of %q", r.Content)
	}
	if r.Metadata["exit_code"] != 3 || r.Metadata["truncated"] != false || r.Metadata["timed_out"] != false {
		t.Fatalf("metadata %v", r.Metadata)
	}

	r = e.call(Bash, BashArgs{Command: "true"})
	if r.Content != "(no output)\n\nExit code: 0" || r.IsError {
		t.Fatalf("%q", r.Content)
	}
	r = e.call(Bash, BashArgs{Command: "kill -TERM $$"})
	if lastLine(r.Content) != "Exit code: 143 (terminated by SIGTERM)" {
		t.Fatalf("%q", r.Content)
	}
	r = e.call(Bash, BashArgs{Command: "  "})
	if !r.IsError {
		t.Fatalf("empty command: %q", r.Content)
	}
}

func TestCwdIsRoot(t *testing.T) {
	e := newEnv(t)
	r := e.call(Bash, BashArgs{Command: "pwd -P"})
	if got := strings.SplitN(r.Content, "\n", 2)[0]; got != e.ws.Root() {
		t.Fatalf("cwd %q, want %q", got, e.ws.Root())
	}
	// A run's own workspace wins.
	other, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r = e.callCtx(workspace.WithWorkspace(context.Background(), other), Bash, "s1", BashArgs{Command: "pwd -P"})
	if got := strings.SplitN(r.Content, "\n", 2)[0]; got != other.Root() {
		t.Fatalf("cwd %q, want %q", got, other.Root())
	}
}

func TestTimeoutKillsGroup(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	r := e.call(Bash, BashArgs{Command: "sleep 1000 & echo $! > child; echo $$ > shell; echo started; sleep 1000", Timeout: 300})
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %s", d)
	}
	if !r.IsError || r.Metadata["timed_out"] != true {
		t.Fatalf("%v %q", r.Metadata, r.Content)
	}
	if !strings.Contains(r.Content, "started\n") || !strings.Contains(r.Content, "Command killed after timeout of 300 ms.") {
		t.Fatalf("%q", r.Content)
	}
	if !strings.HasPrefix(lastLine(r.Content), "Exit code: ") {
		t.Fatalf("%q", r.Content)
	}
	gone(t, e.readPid("child"))
	gone(t, e.readPid("shell"))
}

func TestTimeoutClamped(t *testing.T) {
	e := newEnv(t)
	r := e.call(Bash, BashArgs{Command: "echo hi", Timeout: 900000})
	if !strings.Contains(r.Content, "The timeout of 900000 ms is above the maximum; 600000 ms was used.") || r.IsError {
		t.Fatalf("%q", r.Content)
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		e.readPid("child")
		cancel()
	}()
	r := e.callCtx(ctx, Bash, "s1", BashArgs{Command: "sleep 1000 & echo $! > child; wait"})
	if !r.IsError || r.Metadata["cancelled"] != true || !strings.Contains(r.Content, "Command cancelled") {
		t.Fatalf("%v %q", r.Metadata, r.Content)
	}
	gone(t, e.readPid("child"))
}

func TestLeftoversKilledAndNoHang(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	// The grandchild keeps the output pipe open; the call must not wait
	// for it, and it must not outlive the call.
	r := e.call(Bash, BashArgs{Command: "sleep 1000 & echo $! > child; echo done"})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %s", d)
	}
	if r.Content != "done\n\nExit code: 0" {
		t.Fatalf("%q", r.Content)
	}
	gone(t, e.readPid("child"))

	// A grandchild that ignores SIGTERM gets SIGKILL.
	old := termGrace
	termGrace = 200 * time.Millisecond
	defer func() { termGrace = old }()
	r = e.call(Bash, BashArgs{Command: "sh -c 'trap \"\" TERM; echo $$ > stubborn; sleep 1000' & while [ ! -s stubborn ]; do sleep 0.01; done; echo ok"})
	if lastLine(r.Content) != "Exit code: 0" {
		t.Fatalf("%q", r.Content)
	}
	gone(t, e.readPid("stubborn"))
}

func TestOutputCap(t *testing.T) {
	e := newEnv(t)
	// 20000 lines of 10 characters.
	r := e.call(Bash, BashArgs{Command: `awk 'BEGIN{for(i=0;i<20000;i++) printf "line%05d\n", i}'`})
	if r.Metadata["truncated"] != true || r.Metadata["cut_chars"] != 170000 {
		t.Fatalf("metadata %v", r.Metadata)
	}
	if !strings.HasPrefix(r.Content, "line00000\nline00001\n") || !strings.Contains(r.Content, "line19999\n") {
		t.Fatalf("head or tail missing")
	}
	if !strings.Contains(r.Content, "[... 170000 characters cut from the middle of the output ...]") ||
		!strings.Contains(r.Content, "Output truncated: 170000 characters cut") {
		t.Fatalf("no cut note")
	}
	if n := utf8.RuneCountInString(r.Content); n > 30500 {
		t.Fatalf("%d characters", n)
	}
	if lastLine(r.Content) != "Exit code: 0" {
		t.Fatalf("last line %q", lastLine(r.Content))
	}
}

func TestCaptureCharacters(t *testing.T) {
	c := newCapture(10)
	s := strings.Repeat("é", 7) + strings.Repeat("ü", 3) + strings.Repeat("ß", 7)
	// Write in 1-byte pieces, splitting every character.
	for i := range len(s) {
		_, _ = c.Write([]byte{s[i]})
	}
	got, cut := c.text()
	if cut != 7 || got != "ééééé"+cutMarker(7)+"ßßßßß" {
		t.Fatalf("%q %d", got, cut)
	}
	got, cut = capText("short", 10)
	if got != "short" || cut != 0 {
		t.Fatalf("%q %d", got, cut)
	}
	got, cut = capText("0123456789", 10)
	if got != "0123456789" || cut != 0 {
		t.Fatalf("%q %d", got, cut)
	}
	// A long tail is compacted and still right.
	c = newCapture(4)
	for i := range 1000 {
		fmt.Fprintf(c, "%d", i%10)
	}
	got, cut = c.text()
	if cut != 996 || got != "01"+cutMarker(996)+"89" {
		t.Fatalf("%q %d", got, cut)
	}
}

// bashOutputUntil reads a background shell until cond holds for the
// accumulated output and the last result, and returns them. Between reads
// it waits for the shell's notice of new output or of its end.
func (e *env) bashOutputUntil(id string, cond func(all string, last tool.Result) bool) (string, tool.Result) {
	e.t.Helper()
	s := e.ts.lookup(id, "s1")
	if s == nil {
		e.t.Fatalf("no background shell %s", id)
	}
	var all strings.Builder
	timeout := time.After(5 * time.Second)
	for {
		r := e.call(BashOutput, BashOutputArgs{BashID: id})
		if r.IsError {
			e.t.Fatalf("BashOutput: %q", r.Content)
		}
		if out, _, _ := strings.Cut(r.Content, "\n\n"); out != "(no new output)" {
			all.WriteString(out + "\n")
		}
		if cond(all.String(), r) {
			return all.String(), r
		}
		select {
		case <-s.appended:
		case <-s.done:
		case <-timeout:
			e.t.Fatalf("gave up; read %q, last %q", all.String(), r.Content)
		}
	}
}

func TestBackground(t *testing.T) {
	e := newEnv(t)
	r := e.call(Bash, BashArgs{Command: "echo one; while [ ! -f go ]; do sleep 0.01; done; echo two; exit 4", RunInBackground: true})
	if r.IsError || r.Metadata["shell_id"] != "bash_1" || !strings.HasPrefix(r.Content, "Command running in background with ID: bash_1\n") {
		t.Fatalf("%v %q", r.Metadata, r.Content)
	}
	all, last := e.bashOutputUntil("bash_1", func(all string, _ tool.Result) bool { return strings.Contains(all, "one") })
	if lastLine(last.Content) != "Status: running" || last.Metadata["running"] != true {
		t.Fatalf("%q", last.Content)
	}
	if all != "one\n" {
		t.Fatalf("%q", all)
	}
	if err := os.WriteFile(e.path("go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	all, last = e.bashOutputUntil("bash_1", func(_ string, r tool.Result) bool { return r.Metadata["running"] == false })
	if all != "two\n" {
		t.Fatalf("incremental read gave %q", all)
	}
	if lastLine(last.Content) != "Status: exited with code 4" || last.Metadata["exit_code"] != 4 {
		t.Fatalf("%q %v", last.Content, last.Metadata)
	}
	r = e.call(BashOutput, BashOutputArgs{BashID: "bash_1"})
	if r.Content != "(no new output)\n\nStatus: exited with code 4" {
		t.Fatalf("%q", r.Content)
	}
	r = e.call(KillShell, KillShellArgs{ShellID: "bash_1"})
	if r.IsError || !strings.Contains(r.Content, "not running: exited with code 4") {
		t.Fatalf("%q", r.Content)
	}
}

func TestBackgroundFilter(t *testing.T) {
	e := newEnv(t)
	e.call(Bash, BashArgs{Command: "printf 'a1\\nb2\\na3\\n'", RunInBackground: true})
	<-e.ts.lookup("bash_1", "s1").done
	r := e.call(BashOutput, BashOutputArgs{BashID: "bash_1", Filter: "^a"})
	want := "a1\na3\n\nFilter \"^a\": 2 of 3 new lines shown.\nStatus: exited with code 0"
	if r.Content != want {
		t.Fatalf("%q", r.Content)
	}
	r = e.call(BashOutput, BashOutputArgs{BashID: "bash_1", Filter: "("})
	if !r.IsError {
		t.Fatalf("bad filter: %q", r.Content)
	}
}

func TestKillShell(t *testing.T) {
	e := newEnv(t)
	e.call(Bash, BashArgs{Command: "sleep 1000 & echo $! > child; echo $$ > shell; wait", RunInBackground: true})
	child, shell := e.readPid("child"), e.readPid("shell")
	r := e.call(KillShell, KillShellArgs{ShellID: "bash_1"})
	if r.IsError || !strings.HasPrefix(r.Content, "Successfully killed shell: bash_1 (sleep 1000 & echo") {
		t.Fatalf("%q", r.Content)
	}
	gone(t, child)
	gone(t, shell)
	r = e.call(BashOutput, BashOutputArgs{BashID: "bash_1"})
	if lastLine(r.Content) != "Status: killed" {
		t.Fatalf("%q", r.Content)
	}
	r = e.call(KillShell, KillShellArgs{ShellID: "bash_9"})
	if !r.IsError || r.Content != "No such shell: bash_9" {
		t.Fatalf("%q", r.Content)
	}
}

func TestShellsBelongToTheirSession(t *testing.T) {
	e := newEnv(t)
	e.callCtx(context.Background(), Bash, "a", BashArgs{Command: "echo mine; sleep 1000", RunInBackground: true})
	for _, name := range []string{BashOutput, KillShell} {
		r := e.callCtx(context.Background(), name, "b", map[string]string{"bash_id": "bash_1", "shell_id": "bash_1"})
		if !r.IsError || r.Content != "No such shell: bash_1" {
			t.Fatalf("%s from another session: %q", name, r.Content)
		}
	}
	r := e.callCtx(context.Background(), BashOutput, "a", BashOutputArgs{BashID: "bash_1"})
	if r.IsError || lastLine(r.Content) != "Status: running" {
		t.Fatalf("%q", r.Content)
	}
}

func TestBackgroundLimitAndClose(t *testing.T) {
	e := newEnv(t)
	for i := range maxRunning {
		r := e.call(Bash, BashArgs{Command: fmt.Sprintf("sleep 1000 & echo $! > p%d; wait", i), RunInBackground: true})
		if r.IsError {
			t.Fatalf("shell %d: %q", i, r.Content)
		}
	}
	r := e.call(Bash, BashArgs{Command: "echo one too many", RunInBackground: true})
	if !r.IsError || !strings.Contains(r.Content, "16 background shells are already running") {
		t.Fatalf("%q", r.Content)
	}
	// Foreground commands are not limited.
	if r := e.call(Bash, BashArgs{Command: "echo fg"}); r.IsError {
		t.Fatalf("%q", r.Content)
	}
	r = e.call(KillShell, KillShellArgs{ShellID: "bash_3"})
	if r.IsError {
		t.Fatalf("%q", r.Content)
	}
	r = e.call(Bash, BashArgs{Command: "sleep 1000 & echo $! > p16; wait", RunInBackground: true})
	if r.IsError || r.Metadata["shell_id"] != "bash_17" {
		t.Fatalf("after a kill: %v %q", r.Metadata, r.Content)
	}
	pids := make([]int, 0, maxRunning+1)
	for i := range maxRunning + 1 {
		pids = append(pids, e.readPid(fmt.Sprintf("p%d", i)))
	}
	if err := e.ts.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		gone(t, pid)
	}
	if r := e.call(Bash, BashArgs{Command: "echo late"}); !r.IsError {
		t.Fatalf("after Close: %q", r.Content)
	}
	if r := e.call(Bash, BashArgs{Command: "echo late", RunInBackground: true}); !r.IsError {
		t.Fatalf("after Close: %q", r.Content)
	}
}

func TestCloseCancelsForeground(t *testing.T) {
	e := newEnv(t)
	done := make(chan tool.Result)
	go func() { done <- e.call(Bash, BashArgs{Command: "sleep 1000 & echo $! > child; wait"}) }()
	child := e.readPid("child")
	if err := e.ts.Close(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Metadata["cancelled"] != true {
		t.Fatalf("%q", r.Content)
	}
	gone(t, child)
}

func TestBackgroundBufferDropsOldest(t *testing.T) {
	s := &bgShell{}
	chunk := strings.Repeat("x", 1000) + "\n"
	for range 3000 {
		s.append([]byte(chunk))
	}
	s.append([]byte("end\n"))
	b, dropped, _ := s.take()
	if len(b) != bgBufferBytes || dropped != int64(3000*len(chunk)+4-bgBufferBytes) || !strings.HasSuffix(string(b), "x\nend\n") {
		t.Fatalf("%d bytes, %d dropped", len(b), dropped)
	}
	if b, dropped, _ := s.take(); len(b) != 0 || dropped != 0 {
		t.Fatal("second take not empty")
	}
}

func TestNewOutput(t *testing.T) {
	for _, c := range []struct{ prev, out, want string }{
		{"", "abc", "abc"},
		{"abc", "abcdef", "def"},
		{"abcdef", "cdefgh", "gh"},
		{"abcdef", "efgh", "gh"},
		{strings.Repeat("0123456789", 300), strings.Repeat("0123456789", 200) + "new", "new"},
	} {
		if got, ok := newOutput(c.prev, c.out); got != c.want || !ok {
			t.Errorf("newOutput(%q, %q) = %q, %v", c.prev, c.out, got, ok)
		}
	}
	if got, ok := newOutput("abc", "xyz"); got != "xyz" || ok {
		t.Errorf("unmatched: %q %v", got, ok)
	}
}

// fakeTerminal is a front end's terminal: commands do not run; each
// process is driven by the test.
type fakeTerminal struct {
	mu    sync.Mutex
	reqs  []workspace.TerminalRequest
	procs []*fakeProc
	// setup prepares each new process (output, exit).
	setup func(p *fakeProc)
}

func (f *fakeTerminal) Start(ctx context.Context, req workspace.TerminalRequest) (workspace.TerminalProcess, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &fakeProc{id: fmt.Sprintf("term_%d", len(f.procs)+1), exited: make(chan struct{})}
	f.reqs = append(f.reqs, req)
	f.procs = append(f.procs, p)
	if f.setup != nil {
		f.setup(p)
	}
	return p, nil
}

type fakeProc struct {
	id       string
	mu       sync.Mutex
	out      string
	exit     *workspace.ExitStatus
	exited   chan struct{}
	killed   bool
	released bool
}

func (p *fakeProc) write(s string) {
	p.mu.Lock()
	p.out += s
	p.mu.Unlock()
}

func (p *fakeProc) end(st workspace.ExitStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exit == nil {
		p.exit = &st
		close(p.exited)
	}
}

func (p *fakeProc) ID() string { return p.id }

func (p *fakeProc) Wait(ctx context.Context) (workspace.ExitStatus, error) {
	select {
	case <-p.exited:
		p.mu.Lock()
		defer p.mu.Unlock()
		return *p.exit, nil
	case <-ctx.Done():
		return workspace.ExitStatus{}, ctx.Err()
	}
}

func (p *fakeProc) Output(ctx context.Context) (string, bool, *workspace.ExitStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out, false, p.exit, nil
}

func (p *fakeProc) Kill(ctx context.Context) error {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	p.end(workspace.ExitStatus{Signal: "SIGKILL"})
	return nil
}

func (p *fakeProc) Release(ctx context.Context) error {
	p.mu.Lock()
	p.released = true
	p.mu.Unlock()
	p.end(workspace.ExitStatus{Signal: "SIGKILL"})
	return nil
}

func (p *fakeProc) state() (killed, released bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.killed, p.released
}

func TestTerminal(t *testing.T) {
	e := newEnv(t)
	code := 2
	term := &fakeTerminal{setup: func(p *fakeProc) {
		p.write("hello from the editor\n")
		p.end(workspace.ExitStatus{Code: &code})
	}}
	ctx := workspace.WithTerminal(context.Background(), term)
	r := e.callCtx(ctx, Bash, "s1", BashArgs{Command: "make test"})
	if r.Content != "hello from the editor\n\nExit code: 2" || r.IsError {
		t.Fatalf("%q", r.Content)
	}
	if r.Metadata["terminal_id"] != "term_1" || r.Metadata["exit_code"] != 2 {
		t.Fatalf("%v", r.Metadata)
	}
	req := term.reqs[0]
	if req.Command != "/bin/sh" || strings.Join(req.Args, " ") != "-c make test" || req.Cwd != e.ws.Root() || req.OutputByteLimit != 30000 {
		t.Fatalf("request %+v", req)
	}
	if _, released := term.procs[0].state(); !released {
		t.Fatal("terminal not released")
	}
}

func TestTerminalTimeout(t *testing.T) {
	e := newEnv(t)
	term := &fakeTerminal{setup: func(p *fakeProc) { p.write("waiting\n") }}
	ctx := workspace.WithTerminal(context.Background(), term)
	r := e.callCtx(ctx, Bash, "s1", BashArgs{Command: "sleep 1000", Timeout: 50})
	if !r.IsError || r.Metadata["timed_out"] != true || !strings.Contains(r.Content, "Command killed after timeout of 50 ms.") {
		t.Fatalf("%v %q", r.Metadata, r.Content)
	}
	if lastLine(r.Content) != "Exit code: 137 (terminated by SIGKILL)" {
		t.Fatalf("%q", r.Content)
	}
	if killed, released := term.procs[0].state(); !killed || !released {
		t.Fatalf("killed %v released %v", killed, released)
	}
}

func TestTerminalBackground(t *testing.T) {
	e := newEnv(t)
	term := &fakeTerminal{setup: func(p *fakeProc) { p.write("one\n") }}
	ctx := workspace.WithTerminal(context.Background(), term)
	r := e.callCtx(ctx, Bash, "s1", BashArgs{Command: "npm run dev", RunInBackground: true})
	if r.IsError || r.Metadata["terminal_id"] != "term_1" || r.Metadata["shell_id"] != "bash_1" {
		t.Fatalf("%v %q", r.Metadata, r.Content)
	}
	if term.reqs[0].OutputByteLimit != bgBufferBytes {
		t.Fatalf("%+v", term.reqs[0])
	}
	p := term.procs[0]
	r = e.call(BashOutput, BashOutputArgs{BashID: "bash_1"})
	if r.Content != "one\n\nStatus: running" {
		t.Fatalf("%q", r.Content)
	}
	p.write("two\n")
	r = e.call(BashOutput, BashOutputArgs{BashID: "bash_1"})
	if r.Content != "two\n\nStatus: running" {
		t.Fatalf("%q", r.Content)
	}
	p.write("three\n")
	r = e.call(KillShell, KillShellArgs{ShellID: "bash_1"})
	if r.IsError || !strings.HasPrefix(r.Content, "Successfully killed shell: bash_1") {
		t.Fatalf("%q", r.Content)
	}
	if killed, released := p.state(); !killed || !released {
		t.Fatalf("killed %v released %v", killed, released)
	}
	r = e.call(BashOutput, BashOutputArgs{BashID: "bash_1"})
	if r.Content != "three\n\nStatus: killed" {
		t.Fatalf("%q", r.Content)
	}

	// One that exits by itself; Close releases what still runs.
	code := 0
	e.callCtx(ctx, Bash, "s1", BashArgs{Command: "echo hi", RunInBackground: true})
	term.procs[1].end(workspace.ExitStatus{Code: &code})
	_, last := e.bashOutputUntil("bash_2", func(_ string, r tool.Result) bool { return r.Metadata["running"] == false })
	if lastLine(last.Content) != "Status: exited with code 0" {
		t.Fatalf("%q", last.Content)
	}
	e.callCtx(ctx, Bash, "s1", BashArgs{Command: "sleep 1000", RunInBackground: true})
	if err := e.ts.Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range term.procs {
		if _, released := p.state(); !released {
			t.Errorf("terminal %d not released", i)
		}
	}
}

// With SourceEnvFile, Bash (foreground and background) runs after the
// session's environment file: its exports are seen, a broken file does
// not stop the command, and its own output is not part of the result.
func TestSourceEnvFile(t *testing.T) {
	e := newEnv(t)
	good := e.path("env's good.sh")
	os.WriteFile(good, []byte("echo noise\nexport FOO=from-env\n"), 0o600)
	bad := e.path("bad.sh")
	os.WriteFile(bad, []byte("export BAR=set\nif then fi (\n"), 0o600)
	file := good
	e.ts.SourceEnvFile(func(ctx context.Context) string { return file })

	r := e.call(Bash, BashArgs{Command: `echo "FOO=$FOO"`})
	if r.IsError || !strings.HasPrefix(r.Content, "FOO=from-env\n") {
		t.Errorf("foreground: %q", r.Content)
	}
	start := e.call(Bash, BashArgs{Command: `echo "bg FOO=$FOO"`, RunInBackground: true})
	id, _ := start.Metadata["shell_id"].(string)
	all, _ := e.bashOutputUntil(id, func(_ string, last tool.Result) bool { return last.Metadata["running"] == false })
	if !strings.Contains(all, "bg FOO=from-env") || strings.Contains(all, "noise") {
		t.Errorf("background: %q", all)
	}

	file = bad
	r = e.call(Bash, BashArgs{Command: `echo "BAR=$BAR"; exit 3`})
	if !strings.HasPrefix(r.Content, "BAR=set\n") || lastLine(r.Content) != "Exit code: 3" {
		t.Errorf("broken file: %q", r.Content)
	}
	file = ""
	if r := e.call(Bash, BashArgs{Command: `echo "FOO=$FOO"`}); !strings.HasPrefix(r.Content, "FOO=\n") {
		t.Errorf("no file: %q", r.Content)
	}
}
