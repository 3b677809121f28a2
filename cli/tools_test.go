package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
)

// toolResults returns the tool_call_complete events of a jsonl run, at any
// depth, in stream order.
func toolResults(t *testing.T, stdout string) []event.ToolCallComplete {
	t.Helper()
	var out []event.ToolCallComplete
	for _, e := range decodeJSONL(t, stdout) {
		_, inner := event.Unwrap("", e)
		for {
			s, ok := inner.(event.Subagent)
			if !ok {
				break
			}
			inner = s.Event
		}
		if c, ok := inner.(event.ToolCallComplete); ok {
			out = append(out, c)
		}
	}
	return out
}

func resultOf(t *testing.T, results []event.ToolCallComplete, name string, nth int) event.ToolCallComplete {
	t.Helper()
	for _, r := range results {
		if r.ToolName == name {
			if nth == 0 {
				return r
			}
			nth--
		}
	}
	t.Fatalf("no result %d of %s", nth, name)
	return event.ToolCallComplete{}
}

func TestRunToolsExample(t *testing.T) {
	ws := t.TempDir()
	ex, _ := filepath.Abs("../examples/tools.yaml")
	r := runCLI(t, t.TempDir(), "run", "-c", ex, "--workspace", ws, "--db", ":memory:", "--output", "jsonl", "Tidy the notes")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := toolResults(t, r.stdout)
	if got := resultOf(t, res, "Read", 0); !strings.Contains(got.ToolResult, "     4\t- fix the tpyo") || got.IsError {
		t.Errorf("Read shows no file contents: %q", got.ToolResult)
	}
	edit := resultOf(t, res, "Edit", 0)
	if edit.IsError || len(edit.Diffs) != 1 || !strings.Contains(edit.Diffs[0].NewText, "fix the typo") || !strings.Contains(*edit.Diffs[0].OldText, "tpyo") {
		t.Errorf("Edit result %+v", edit)
	}
	if got := resultOf(t, res, "Bash", 0); got.IsError || !strings.HasPrefix(got.ToolResult, "5 notes/today.md\n1\n") || !strings.HasSuffix(got.ToolResult, "Exit code: 0") {
		t.Errorf("Bash result %q", got.ToolResult)
	}
	if got := resultOf(t, res, "Read", 1); !got.IsError || !strings.Contains(got.ToolResult, "outside the workspace") {
		t.Errorf("reading /etc/hostname was not refused: %+v", got)
	}
	if got := resultOf(t, res, "Glob", 0); !strings.Contains(got.ToolResult, filepath.Join(ws, "notes", "today.md")) {
		t.Errorf("the worker's Glob did not find the file: %q", got.ToolResult)
	}
	data, err := os.ReadFile(filepath.Join(ws, "notes", "today.md"))
	if err != nil || !strings.Contains(string(data), "fix the typo") {
		t.Errorf("workspace file: %q, %v", data, err)
	}
}

const askManifest = `agents:
  a:
    tools: [execution]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: "echo ran"}}]
        - text: done
`

func TestRunAskWithoutTerminal(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(askManifest), 0o644)
	r := runCLI(t, dir, "run", "--db", ":memory:", "--output", "jsonl", "go")
	if r.code != exitIncomplete {
		t.Fatalf("exit %d, want %d (a tool call was denied): %s", r.code, exitIncomplete, r.stderr)
	}
	got := resultOf(t, toolResults(t, r.stdout), "Bash", 0)
	if !got.IsError || !strings.Contains(got.ToolResult, "nobody was asked: no terminal to ask on") || !strings.Contains(got.ToolResult, "--allow Bash") ||
		!strings.Contains(got.ToolResult, "tool_approval: {Bash: allow} on agent a") {
		t.Errorf("Bash without approval: %+v", got)
	}
	r = runCLI(t, dir, "run", "--db", ":memory:", "--output", "jsonl", "--allow", "Bash", "go")
	if got := resultOf(t, toolResults(t, r.stdout), "Bash", 0); got.IsError || !strings.HasPrefix(got.ToolResult, "ran\n") {
		t.Errorf("Bash with --allow: %+v", got)
	}
	r = runCLI(t, dir, "run", "--db", ":memory:", "--allow", "[", "go")
	if r.code == 0 || !strings.Contains(r.stderr, `--allow "[": not a tool name or pattern`) {
		t.Errorf("bad --allow: exit %d, %s", r.code, r.stderr)
	}
}

// TestRunHooksSeeBuiltinTools wires Claude Code command hooks of the kind
// published for Claude Code: a PreToolUse guard on Bash that refuses
// `rm -rf` (exit 2, reason on stderr) and a PostToolUse logger of the files
// that Edit and Write touch.
func TestRunHooksSeeBuiltinTools(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	os.MkdirAll(ws, 0o755)
	guard := `input=$(cat)
case "$input" in *'"command":"rm -rf'*) echo "Blocked: rm -rf is not allowed" >&2; exit 2;; esac
exit 0
`
	logger := `cat >> "$CLAUDE_PROJECT_DIR/edits.jsonl"; echo >> "$CLAUDE_PROJECT_DIR/edits.jsonl"`
	os.WriteFile(filepath.Join(dir, ".claude", "guard.sh"), []byte(guard), 0o755)
	os.WriteFile(filepath.Join(dir, ".claude", "log.sh"), []byte(logger), 0o755)
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(`{"hooks": {
  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR/.claude/guard.sh\""}]}],
  "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR/.claude/log.sh\""}]}]
}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(`hooks: {settings: .claude/settings.json}
agents:
  a:
    tools: [file_access, execution]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Write, args: {file_path: keep/me.txt, content: "precious\n"}}]
        - tool_calls: [{name: Bash, args: {command: "rm -rf keep"}}]
        - tool_calls: [{name: Bash, args: {command: "ls keep"}}]
        - text: done
`), 0o644)
	r := runCLI(t, dir, "run", "--db", ":memory:", "--output", "jsonl", "--workspace", ws, "go")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	res := toolResults(t, r.stdout)
	if got := resultOf(t, res, "Bash", 0); !got.IsError || !strings.Contains(got.ToolResult, "Blocked: rm -rf is not allowed") {
		t.Errorf("rm -rf was not blocked: %+v", got)
	}
	if got := resultOf(t, res, "Bash", 1); got.IsError || !strings.HasPrefix(got.ToolResult, "me.txt\n") {
		t.Errorf("ls after the blocked rm: %+v", got)
	}
	log, err := os.ReadFile(filepath.Join(dir, "edits.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var entry struct {
		HookEventName string         `json:"hook_event_name"`
		ToolName      string         `json:"tool_name"`
		ToolInput     map[string]any `json:"tool_input"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(log), &entry); err != nil {
		t.Fatalf("log %q: %v", log, err)
	}
	if entry.HookEventName != "PostToolUse" || entry.ToolName != "Write" || entry.ToolInput["file_path"] != "keep/me.txt" {
		t.Errorf("PostToolUse payload %+v", entry)
	}
}

// mcpEverything returns the path of server-everything's entry point from the
// npm packages `make test` installs, or skips.
func mcpEverything(t *testing.T) string {
	t.Helper()
	mods := os.Getenv("AGENTPOOL_MCP_NODE_MODULES")
	if mods == "" {
		t.Skip("AGENTPOOL_MCP_NODE_MODULES is unset: `make test` installs tests/mcp and sets it")
	}
	p := filepath.Join(mods, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("server-everything: %v", err)
	}
	return p
}

// markedProcesses lists the pids whose environment holds marker.
func markedProcesses(t *testing.T, marker string) []string {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(marker)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			// A zombie is gone for our purpose: it runs nothing.
			if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		out = append(out, e.Name())
	}
	return out
}

// mcpManifest runs server-everything behind a shell that leaves a
// process of its own in the server's process group (a child the server
// started), which carries the marker too: a test that finds no marked
// process left proves that the whole group ended.
// The shell writes the file started before it becomes the server.
func mcpManifest(server, marker, started, lastTurn string) string {
	return `mcp_servers:
  - name: everything
    command: sh
    args: ["-c", "sleep 1000 & echo $$ > '` + started + `'; exec node '` + server + `' stdio"]
    env: {AGENTPOOL_TEST_MARKER: "` + marker + `"}
agents:
  a:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: mcp__everything__echo, args: {message: "hello over MCP"}}]
        - ` + lastTurn + `
`
}

func TestRunMCPServerNoOrphan(t *testing.T) {
	server := mcpEverything(t)
	dir := t.TempDir()
	marker := "mcp-" + dir // unique: a temp dir's base name is not
	os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(mcpManifest(server, marker, filepath.Join(dir, "mcp.started"), "text: done")), 0o644)
	r := runCLI(t, dir, "run", "--db", ":memory:", "--output", "jsonl", "--allow", "mcp__*", "go")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := resultOf(t, toolResults(t, r.stdout), "mcp__everything__echo", 0); got.IsError || !strings.Contains(got.ToolResult, "hello over MCP") {
		t.Errorf("echo result %+v", got)
	}
	if left := markedProcesses(t, marker); len(left) > 0 {
		t.Errorf("MCP server processes left after the run: %v", left)
	}
}

func TestRunMCPServerGoneAfterSignal(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	server := mcpEverything(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := "mcp-" + dir // unique: a temp dir's base name is not
			started := filepath.Join(dir, "mcp.started")
			os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(mcpManifest(server, marker, started, `{text: "never shown", delay: 1m}`)), 0o644)
			cmd := exec.Command(cliBinary(t), "run", "--db", ":memory:", "--allow", "mcp__*", "go")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if !proctreetest.WaitFile(started, 30*time.Second, hasLine) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the MCP server never started: %s", stderr.String())
			}
			if len(markedProcesses(t, marker)) == 0 {
				t.Fatal("the MCP server started without the marker")
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
				t.Errorf("exit after %s: %v (%s)", sig, err, stderr.String())
			}
			if left := markedProcesses(t, marker); len(left) > 0 {
				t.Errorf("MCP server processes left after %s: %v", sig, left)
			}
		})
	}
}

// TestRunBackgroundShellGoneAfterSignal: a Bash background shell, and the
// process it started, end with `agentpool run` when it is stopped by a
// signal, SIGHUP (a closed terminal) included: no process outlives the
// pool.
func TestRunBackgroundShellGoneAfterSignal(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(`agents:
  a:
    tools: [execution]
    tool_approval: {Bash: allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: "sleep 1000 & echo $! > child.pid; wait", run_in_background: true}}]
        - {text: "never shown", delay: 1m}
`), 0o644)
			cmd := exec.Command(cliBinary(t), "run", "--db", ":memory:", "go")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if !proctreetest.WaitFile(filepath.Join(dir, "child.pid"), 30*time.Second, hasLine) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the background shell never started: %s", stderr.String())
			}
			// The shell wrote $! after the fork: the child runs (or is a
			// zombie of the shell, which waits for it), so its stat is there.
			b, _ := os.ReadFile(filepath.Join(dir, "child.pid"))
			child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			var group int
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child)); err == nil && child > 0 {
				// pid (comm) state ppid pgrp ...
				if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 2 {
					group, _ = strconv.Atoi(f[2])
				}
			}
			if group == 0 {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no process group for the background shell's child %d", child)
			}
			t.Cleanup(func() { syscall.Kill(-group, syscall.SIGKILL) })
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
				t.Errorf("exit after %s: %v (%s)", sig, err, stderr.String())
			}
			if err := syscall.Kill(-group, 0); err != syscall.ESRCH && groupAlive(group) {
				t.Errorf("the background shell's process group %d outlived agentpool after %s", group, sig)
			}
		})
	}
}

// hasLine reports whether a file a shell writes holds a whole line.
func hasLine(b []byte) bool { return bytes.HasSuffix(b, []byte("\n")) }

// groupAlive reports whether a process of group pgid runs (zombies do not
// count).
func groupAlive(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil || e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// TestSetsidEscape: `agentpool run` leaves no descendant behind, not even
// one that left its process group and session (setsid) and was orphaned:
// a background shell's escaped process and the shell itself are killed
// and reaped by agentpool (a subreaper) whether the run completes or is
// stopped by a signal.
func TestSetsidEscape(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	const escape = `echo $$ > shell.pid; setsid sh -c 'echo $$ > escaped.tmp && mv escaped.tmp escaped.pid; exec sleep 1000' & while [ ! -s escaped.pid ]; do sleep 0.01; done; echo started; sleep 1000`
	for _, how := range []string{"completed", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			// The run completes once the escaped process runs.
			last := `tool_calls: [{name: Bash, args: {command: "while [ ! -s escaped.pid ]; do sleep 0.01; done"}}]
        - {text: done}`
			if how == "SIGTERM" {
				last = `{text: "never shown", delay: 1m}`
			}
			command, _ := json.Marshal(escape)
			os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(`agents:
  a:
    tools: [execution]
    tool_approval: {Bash: allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: `+string(command)+`, run_in_background: true}}]
        - `+last+`
`), 0o644)
			cmd := exec.Command(cliBinary(t), "run", "--db", ":memory:", "go")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pidIn := func(name string) int {
				b, _ := os.ReadFile(filepath.Join(dir, name))
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				return pid
			}
			if how == "SIGTERM" {
				if !proctreetest.WaitFile(filepath.Join(dir, "escaped.pid"), 30*time.Second, hasLine) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("the background shell never started: %s", stderr.String())
				}
				cmd.Process.Signal(syscall.SIGTERM)
			}
			err := cmd.Wait()
			shell, escaped := pidIn("shell.pid"), pidIn("escaped.pid")
			if shell == 0 || escaped == 0 {
				t.Fatalf("the background shell did not run (%v): %s", err, stderr.String())
			}
			for _, pid := range []int{shell, escaped} {
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("process %d outlived agentpool run (%s): %v", pid, how, err)
				}
			}
		})
	}
}
