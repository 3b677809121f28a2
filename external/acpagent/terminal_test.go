package acpagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/external/acpagent"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
	"github.com/agentpool/agentpool/spawn"
)

func allow(approval.Request) approval.Reply  { return approval.AllowOnce }
func reject(approval.Request) approval.Reply { return approval.RejectOnce }

// reply decodes the test agent's answer, the run's output.
func reply(t *testing.T, output string) testReply {
	t.Helper()
	var r testReply
	if err := json.Unmarshal([]byte(output), &r); err != nil {
		t.Fatalf("the agent's answer %q: %v", output, err)
	}
	return r
}

// replyOf is reply of a run's result; a run without an answer fails the
// test with how it ended (an agent that crashed: its stderr's tail).
func replyOf(t *testing.T, res spawn.Result) testReply {
	t.Helper()
	var r testReply
	if err := json.Unmarshal([]byte(res.Output), &r); err != nil {
		t.Fatalf("the agent's answer %q: %v; the run ended %s: %v", res.Output, err, res.StopReason, res.Err)
	}
	return r
}

// terminalRequest is the JSON of a terminal/create request.
func terminalRequest(t *testing.T, req map[string]any) string {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An agent's terminal runs its command through our Bash tool: the member
// offers the terminal capability, the command line (env exported, args
// quoted) reaches tools/pre-execute and the approval broker as the
// member's Bash call, runs in the requested directory inside the
// member's, and the agent reads its output and exit code.
func TestTerminalRunsThroughBash(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	node := testAgentNode(t, acpagent.Config{Dir: dir, AllowTerminal: true})
	reg := hook.New(hook.Options{})
	var mu sync.Mutex
	var pre []hook.ToolCall
	reg.OnPreExecute.Use(func(ctx context.Context, in hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
		mu.Lock()
		pre = append(pre, in)
		mu.Unlock()
		return next(ctx, in)
	})
	p, seen := testPoolWithHooks(t, reg, allow, node)
	sub := filepath.Join(dir, "sub")
	script := `printf "out\n"; echo err >&2; echo "$GREETING"; pwd; printf "%s|" "$@"; exit 3`
	req := terminalRequest(t, map[string]any{
		"command": "sh",
		"args":    []string{"-c", script, "sh", "a b", "it's"},
		"env":     []map[string]string{{"name": "GREETING", "value": "it's me"}},
		"cwd":     sub,
	})
	res, _ := run(t, context.Background(), p, "tester", "run "+req, nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("result %+v", res.Result)
	}
	r := replyOf(t, res.Result)
	if !r.Terminal {
		t.Error("the terminal capability was not offered")
	}
	if r.Error != "" || r.ID == "" {
		t.Fatalf("reply %+v", r)
	}
	realSub, _ := filepath.EvalSymlinks(sub)
	if want := "out\nerr\nit's me\n" + realSub + "\na b|it's|"; r.Output != want {
		t.Errorf("output %q, want %q", r.Output, want)
	}
	if r.Code == nil || *r.Code != 3 || r.Signal != nil || r.Cut {
		t.Errorf("exit %v %v truncated %v", r.Code, r.Signal, r.Cut)
	}
	wantLine := "export GREETING='it'\\''s me'\nsh '-c' '" + script + "' 'sh' 'a b' 'it'\\''s'"
	var cmd struct {
		Command    string `json:"command"`
		Background bool   `json:"run_in_background"`
	}
	mu.Lock()
	calls := append([]hook.ToolCall(nil), pre...)
	mu.Unlock()
	if len(calls) != 1 || calls[0].ToolName != "Bash" || calls[0].Agent != "tester" || calls[0].SessionID != res.SessionID {
		t.Fatalf("tools/pre-execute saw %+v", calls)
	}
	if err := json.Unmarshal(calls[0].Input, &cmd); err != nil || cmd.Command != wantLine || !cmd.Background {
		t.Errorf("Bash input %s (%v), want command %q in the background", calls[0].Input, err, wantLine)
	}
	asked := seen.all()
	if len(asked) != 1 || asked[0].Tool != "Bash" || asked[0].Agent != "tester" || asked[0].SessionID != res.SessionID {
		t.Fatalf("approvals %+v", asked)
	}
}

// A refused Bash is a refused terminal/create: the agent gets the reason
// and the command never runs. A hook's changed command is what runs.
func TestTerminalRefusedOrChangedByHooks(t *testing.T) {
	dir := t.TempDir()
	node := testAgentNode(t, acpagent.Config{Dir: dir, AllowTerminal: true})
	p, seen := testPool(t, reject, node)
	res, _ := run(t, context.Background(), p, "tester", "run "+terminalRequest(t, map[string]any{"command": "touch ran"}), nil)
	r := replyOf(t, res.Result)
	if !strings.Contains(r.Error, "create: ") || !strings.Contains(r.Error, "denied") || r.ID != "" {
		t.Errorf("refused: reply %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused command ran: %v", err)
	}
	if len(seen.all()) != 1 {
		t.Errorf("approvals %+v", seen.all())
	}

	reg := hook.New(hook.Options{})
	reg.OnPreExecute.Use(func(ctx context.Context, in hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
		if in.ToolName != "Bash" {
			return next(ctx, in)
		}
		// A hook that allows Bash with its own command (and without
		// run_in_background, which the terminal keeps anyway).
		return agent.ToolDecision{Action: agent.ToolAllow, UpdatedInput: json.RawMessage(`{"command":"echo changed by the hook"}`)}
	})
	p, seen = testPoolWithHooks(t, reg, nil, node)
	res, _ = run(t, context.Background(), p, "tester", "run "+terminalRequest(t, map[string]any{"command": "touch ran"}), nil)
	r = replyOf(t, res.Result)
	if r.Error != "" || r.Output != "changed by the hook\n" || r.Code == nil || *r.Code != 0 {
		t.Errorf("changed: reply %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the agent's command ran instead of the hook's: %v", err)
	}
	if len(seen.all()) != 0 {
		t.Errorf("asked though a hook allowed: %+v", seen.all())
	}
}

// outputByteLimit keeps the end of the output, cut at a character
// boundary; terminal/kill ends the command with its tree (SIGTERM).
func TestTerminalOutputLimitAndKill(t *testing.T) {
	node := testAgentNode(t, acpagent.Config{AllowTerminal: true})
	p, _ := testPool(t, allow, node)
	// "aéé" is 5 bytes; the last 3 start inside the first é.
	res, _ := run(t, context.Background(), p, "tester", "run "+terminalRequest(t, map[string]any{"command": "printf 'a\\303\\251\\303\\251'", "outputByteLimit": 3}), nil)
	r := replyOf(t, res.Result)
	if r.Error != "" || r.Output != "é" || !r.Cut {
		t.Errorf("limited: reply %+v", r)
	}
	res, _ = run(t, context.Background(), p, "tester", "kill "+terminalRequest(t, map[string]any{"command": "sleep 1000 & wait"}), nil)
	r = replyOf(t, res.Result)
	if r.Error != "" || r.Signal == nil || *r.Signal != "SIGTERM" || r.Code != nil {
		t.Errorf("killed: reply %+v", r)
	}
}

// A terminal the agent leaves running is killed, with its process tree,
// when its delegation ends: before the run returns.
func TestTerminalKilledAtSessionEnd(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	node := testAgentNode(t, acpagent.Config{Dir: dir, AllowTerminal: true})
	p, _ := testPool(t, allow, node)
	// The shell reports the pid of a grandchild, then waits for it.
	req := terminalRequest(t, map[string]any{"command": "sleep 1000 & echo $! > ready; wait"})
	res, _ := run(t, context.Background(), p, "tester", "start "+fifo+" "+req, nil)
	r := replyOf(t, res.Result)
	pid, err := strconv.Atoi(r.Line)
	if r.Error != "" || err != nil {
		t.Fatalf("reply %+v (%v)", r, err)
	}
	// Exited already (a zombie its new parent has not reaped counts).
	if !proctreetest.WaitExit(pid, time.Millisecond) {
		t.Errorf("the terminal's process %d outlived its session", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Without allow_terminal the capability is not offered and terminal/*
// is refused; bad requests get a clear error and start nothing.
func TestTerminalRefusedRequests(t *testing.T) {
	dir := t.TempDir()
	off := testAgentNode(t, acpagent.Config{Name: "off", Dir: dir})
	on := testAgentNode(t, acpagent.Config{Name: "on", Dir: dir, AllowTerminal: true})
	p, seen := testPool(t, allow, off, on)
	for _, c := range []struct {
		node string
		req  map[string]any
		want string
	}{
		{"off", map[string]any{"command": "touch ran"}, "allow_terminal is off for agent off"},
		{"on", map[string]any{"command": "touch ran", "env": []map[string]string{{"name": "A-B", "value": "1"}}}, `env: "A-B" is not a variable name`},
		{"on", map[string]any{"command": "touch ran", "cwd": "/"}, "outside the workspace"},
		{"on", map[string]any{"command": "touch ran", "cwd": filepath.Join(dir, "missing")}, "no such file or directory"},
		{"on", map[string]any{"command": "touch ran", "outputByteLimit": -1}, "outputByteLimit is negative"},
		{"on", map[string]any{"command": "touch ran", "args": []string{strings.Repeat("x", 70<<10)}}, "more than 65536"},
		{"on", map[string]any{"command": "   "}, "command is empty"},
	} {
		res, _ := run(t, context.Background(), p, c.node, "run "+terminalRequest(t, c.req), nil)
		r := replyOf(t, res.Result)
		if r.Terminal != (c.node == "on") {
			t.Errorf("%v: terminal capability %v", c.req, r.Terminal)
		}
		if !strings.Contains(r.Error, c.want) || r.ID != "" {
			t.Errorf("%v: error %q, want %q", c.req, r.Error, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused command ran: %v", err)
	}
	if len(seen.all()) != 0 {
		t.Errorf("asked about refused requests: %+v", seen.all())
	}
}

// Commands in terminals source the session's environment file, as the
// Bash tool of native agents does (hook.Registry.ShellEnvFile: Claude
// Code's CLAUDE_ENV_FILE, written by SessionStart hooks).
func TestTerminalSourcesTheSessionEnvironment(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(t.TempDir(), "env.sh")
	if err := os.WriteFile(envFile, []byte("export FROM_HOOKS=yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	node := testAgentNode(t, acpagent.Config{Dir: dir, AllowTerminal: true})
	reg := hook.New(hook.Options{})
	var mu sync.Mutex
	var sessions []string
	reg.SetShellEnvFile(func(ctx context.Context) string {
		if inv := spawn.InvocationFrom(ctx); inv != nil {
			mu.Lock()
			sessions = append(sessions, inv.Session.ID)
			mu.Unlock()
		}
		return envFile
	})
	p, _ := testPoolWithHooks(t, reg, allow, node)
	res, _ := run(t, context.Background(), p, "tester", "run "+terminalRequest(t, map[string]any{"command": `echo "from hooks: $FROM_HOOKS"`}), nil)
	if r := replyOf(t, res.Result); r.Error != "" || r.Output != "from hooks: yes\n" {
		t.Errorf("reply %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sessions) == 0 || sessions[0] != res.SessionID {
		t.Errorf("the environment file was asked for in sessions %v, want %s", sessions, res.SessionID)
	}
}
