//go:build linux

package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/internal/proctree"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
)

// helperServer configures the test binary as a stdio server; every helper
// process it starts appends its pid to the returned file.
func helperServer(t *testing.T, name, mode string) (ServerConfig, string) {
	t.Helper()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	cfg := ServerConfig{
		Name:    name,
		Command: os.Args[0],
		Env: map[string]string{
			helperEnv:     "server",
			helperModeEnv: mode,
			helperFileEnv: filepath.Join(dir, "marker"),
			helperPIDsEnv: pids,
		},
		Timeout: 10 * time.Second,
	}
	return cfg, pids
}

// gone reports whether pid no longer runs: no such process, or a zombie
// (a killed grandchild waits for its new parent to reap it).
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// readPIDs returns the pids the helpers recorded.
func readPIDs(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// checkGone fails the test for every pid that has not exited within a
// bound (SIGKILLs land asynchronously; the pidfd tells when they have).
func checkGone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if !proctreetest.WaitExit(pid, 5*time.Second) {
			t.Errorf("process %d still runs", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// waitPIDs waits until n helper processes have recorded their pids in
// file (each appends and closes it: an inotify notice).
func waitPIDs(t *testing.T, file string, n int, why string) {
	t.Helper()
	if !proctreetest.WaitFile(file, 10*time.Second, func(b []byte) bool { return len(strings.Fields(string(b))) >= n }) {
		t.Fatalf("recorded pids %v, want %s", readPIDs(t, file), why)
	}
}

// closeAndCheck closes m and checks every helper process is gone; direct
// children must be reaped (ESRCH) at once.
func closeAndCheck(t *testing.T, m *Manager, pidFile string) {
	t.Helper()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	pids := readPIDs(t, pidFile)
	if len(pids) == 0 {
		t.Fatal("no helper process recorded")
	}
	checkGone(t, pids...)
}

func TestStdio(t *testing.T) {
	cfg, pids := helperServer(t, "helper", "")
	cfg.Env["HELPER_EXTRA"] = "extra value"
	cfg.Dir = t.TempDir()
	m := newManager(t, cfg)
	ts := toolset(t, m, "helper")
	names := toolNames(listAll(t, ts))
	if len(names) != 9 || names[0] != "mcp__helper__crash" {
		t.Fatalf("tools = %v", names)
	}
	wantOK(t, call(t, ts, "mcp__helper__echo", map[string]string{"text": "hello"}), "echo: hello")
	if res := call(t, ts, "mcp__helper__env", map[string]string{"text": "HELPER_EXTRA"}); res.Content != "extra value" {
		t.Errorf("env = %+v", res)
	}
	if res := call(t, ts, "mcp__helper__env", map[string]string{"text": "PATH"}); res.Content != os.Getenv("PATH") {
		t.Errorf("inherited env = %+v", res)
	}
	if res := call(t, ts, "mcp__helper__cwd", nil); res.Content != cfg.Dir {
		t.Errorf("cwd = %+v, want %s", res, cfg.Dir)
	}
	pid := status(m, "helper")
	if pid.State != StateConnected || pid.Transport != TransportStdio {
		t.Errorf("status = %+v", pid)
	}
	closeAndCheck(t, m, pids)
	if st := status(m, "helper"); st.State != StateClosed {
		t.Errorf("status after Close = %+v", st)
	}
}

func TestStdioCrashRestart(t *testing.T) {
	cfg, pids := helperServer(t, "helper", "")
	m := newManager(t, cfg)
	ts := toolset(t, m, "helper")
	first := call(t, ts, "mcp__helper__pid", nil).Content

	// The server exits mid-call: restarted once, the call retried and
	// answered by the new process.
	wantOK(t, call(t, ts, "mcp__helper__crash_once", nil), "survived")
	second := call(t, ts, "mcp__helper__pid", nil).Content
	if first == second {
		t.Errorf("pid unchanged (%s) after a crash", first)
	}
	if p, _ := strconv.Atoi(first); !errors.Is(syscall.Kill(p, 0), syscall.ESRCH) {
		t.Errorf("crashed server %d not reaped", p)
	}

	// It crashes again after the restart: an error result, not a loop.
	res := call(t, ts, "mcp__helper__crash", nil)
	t.Logf("crash: %s", res.Content)
	wantError(t, res, "mcp server helper: tool crash: server failed again after a restart")
	if res.Metadata["mcp_server"] != "helper" || res.Metadata["mcp_tool"] != "crash" {
		t.Errorf("metadata = %v", res.Metadata)
	}
	// ... and the next call works.
	wantOK(t, call(t, ts, "mcp__helper__echo", map[string]string{"text": "back"}), "echo: back")
	if n := len(readPIDs(t, pids)); n != 4 {
		t.Errorf("%d server processes, want 4 (start, crash_once restart, crash restart, echo restart)", n)
	}
	closeAndCheck(t, m, pids)
}

func TestStdioHang(t *testing.T) {
	cfg, pids := helperServer(t, "helper", "")
	cfg.Timeout = 300 * time.Millisecond
	m := newManager(t, cfg)
	ts := toolset(t, m, "helper")
	wantError(t, call(t, ts, "mcp__helper__hang", nil), "mcp server helper: tool hang timed out after 300ms")
	wantOK(t, call(t, ts, "mcp__helper__echo", map[string]string{"text": "alive"}), "echo: alive")
	// The hung handler keeps the server from exiting on EOF: Close kills it.
	start := time.Now()
	closeAndCheck(t, m, pids)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s", d)
	}
	if n := len(readPIDs(t, pids)); n != 1 {
		t.Errorf("%d server processes, want 1 (a timeout does not restart)", n)
	}
}

func TestStdioGarbage(t *testing.T) {
	cfg, pids := helperServer(t, "helper", "")
	m := newManager(t, cfg)
	ts := toolset(t, m, "helper")
	res := call(t, ts, "mcp__helper__garbage", nil)
	t.Logf("garbage: %s", res.Content)
	wantError(t, res, "mcp server helper: tool garbage: server failed again after a restart")
	wantOK(t, call(t, ts, "mcp__helper__echo", map[string]string{"text": "clean"}), "echo: clean")
	closeAndCheck(t, m, pids)
}

func TestStdioStartFailure(t *testing.T) {
	cfg, pids := helperServer(t, "helper", "fail-unless")
	m := newManager(t, cfg)
	ts := toolset(t, m, "helper")
	_, err := ts.Tools(context.Background())
	if err == nil {
		t.Fatal("Tools succeeded")
	}
	t.Logf("start error: %v", err)
	for _, want := range []string{"mcp server helper: start:", "exit status 2", "stderr:\nhelper: marker missing, giving up"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want %q in it", err, want)
		}
	}
	if st := status(m, "helper"); st.State != StateFailed || !strings.Contains(st.Error, "marker missing") {
		t.Errorf("status = %+v", st)
	}
	// The failure is not cached: the next Tools starts it again.
	if err := os.WriteFile(cfg.Env[helperFileEnv], nil, 0o644); err != nil {
		t.Fatal(err)
	}
	listAll(t, ts)
	if st := status(m, "helper"); st.State != StateConnected {
		t.Errorf("status = %+v", st)
	}
	closeAndCheck(t, m, pids)
}

func TestStdioBadStart(t *testing.T) {
	// Only the hanging server needs a short start timeout; the others fail
	// by themselves, and a short bound would race their (slow, under load)
	// start-up.
	for _, tc := range []struct {
		mode, want string
		timeout    time.Duration
	}{
		{"fail", "exit status 2", 30 * time.Second},
		{"hang-start", "start: timed out after 300ms", 300 * time.Millisecond},
		{"garbage-start", "invalid character", 30 * time.Second},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg, pids := helperServer(t, "helper", tc.mode)
			m, err := NewManager([]ServerConfig{cfg}, Options{StartTimeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			ts, _ := m.Toolset("helper")
			_, err = ts.Tools(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Tools err = %v, want %q in it", err, tc.want)
			}
			t.Logf("%s: %v", tc.mode, err)
			if st := status(m, "helper"); st.State != StateFailed {
				t.Errorf("status = %+v", st)
			}
			closeAndCheck(t, m, pids)
		})
	}
}

func TestStdioMissingCommand(t *testing.T) {
	m := newManager(t, ServerConfig{Name: "nope", Command: filepath.Join(t.TempDir(), "no-such-server")})
	ts := toolset(t, m, "nope")
	if _, err := ts.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Tools err = %v", err)
	}
	// A tool call on a server that cannot start is an error result.
	tl := &mcpTool{s: m.byName["nope"], name: "x"}
	wantError(t, mustCall(t, tl, "{}"), "mcp server nope: start:")
}

func TestStdioNoOrphans(t *testing.T) {
	cfg, pids := helperServer(t, "helper", "")
	m := newManager(t, cfg)
	ts := toolset(t, m, "helper")
	res := call(t, ts, "mcp__helper__spawn", nil)
	wantOK(t, res, "")
	child, err := strconv.Atoi(res.Content)
	if err != nil {
		t.Fatal(res.Content)
	}
	if gone(child) {
		t.Fatal("grandchild not running")
	}
	// Wait until the grandchild has recorded itself (it starts up
	// concurrently): killing it earlier would also pass, proving less.
	waitPIDs(t, pids, 2, "the server and the grandchild")
	closeAndCheck(t, m, pids)
	checkGone(t, child)
}

// TestSetsidEscape: a process a stdio server started in a session of its
// own (setsid), orphaned when the server exits at Close, is killed and
// reaped with the server's tree.
func TestSetsidEscape(t *testing.T) {
	for _, mode := range []string{"default", "walk"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "walk" {
				was := proctree.SetCgroups(false)
				t.Cleanup(func() { proctree.SetCgroups(was) })
			}
			cfg, pids := helperServer(t, "helper", "")
			m := newManager(t, cfg)
			ts := toolset(t, m, "helper")
			res := call(t, ts, "mcp__helper__spawn", map[string]string{"text": "setsid"})
			wantOK(t, res, "")
			child, err := strconv.Atoi(res.Content)
			if err != nil {
				t.Fatal(res.Content)
			}
			t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
			waitPIDs(t, pids, 2, "the server and the escaped one")
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			// Exited, told by its pidfd; that the subreaper then reaps it
			// at SIGCHLD is proctree's test (it has no notice to wait for).
			if !proctreetest.WaitExit(child, 10*time.Second) {
				t.Fatalf("the escaped process %d outlived the server", child)
			}
		})
	}
}

func TestStdioConcurrentStartAndClose(t *testing.T) {
	cfg, pids := helperServer(t, "helper", "")
	m := newManager(t, cfg)
	ts := toolset(t, m, "helper")
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := ts.Tools(context.Background())
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := len(readPIDs(t, pids)); n != 1 {
		t.Errorf("%d server processes, want 1", n)
	}
	// Close while a start is under way: the new process is stopped too.
	wantOK(t, call(t, ts, "mcp__helper__echo", map[string]string{"text": "x"}), "echo: x")
	cfg2, pids2 := helperServer(t, "second", "")
	m2 := newManager(t, cfg2)
	ts2 := toolset(t, m2, "second")
	started := make(chan struct{})
	go func() {
		defer close(started)
		ts2.Tools(context.Background())
	}()
	waitPIDs(t, pids2, 1, "the second server")
	m2.Close()
	<-started
	closeAndCheck(t, m, pids)
	checkGone(t, readPIDs(t, pids2)...)
}
