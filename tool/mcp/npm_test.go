//go:build linux

package mcp

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/tool"
)

// Tests against the reference MCP servers from npm, pinned in
// tests/mcp/package-lock.json and installed by `npm ci` there.

const nodeModulesEnv = "AGENTPOOL_MCP_NODE_MODULES"

// npmServer returns the path of a package's entry point (its "bin").
func npmServer(t *testing.T, pkg string) string {
	t.Helper()
	dir := os.Getenv(nodeModulesEnv)
	if dir == "" {
		t.Skipf("%s is not set; `make test` sets it to tests/mcp/node_modules (after npm ci there)", nodeModulesEnv)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("%s is set but node is not on PATH: %v", nodeModulesEnv, err)
	}
	entry := filepath.Join(dir, "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("%s: %v (run npm ci in tests/mcp)", pkg, err)
	}
	return entry
}

// stdioPIDs returns the pids of the Manager's running stdio servers.
func stdioPIDs(m *Manager) []int {
	var pids []int
	for _, s := range m.servers {
		s.mu.Lock()
		if s.sess != nil && s.sess.proc != nil {
			pids = append(pids, s.sess.proc.cmd.Process.Pid)
		}
		s.mu.Unlock()
	}
	return pids
}

func TestNPMEverythingStdio(t *testing.T) {
	entry := npmServer(t, "server-everything")
	m := newManager(t, ServerConfig{Name: "everything", Command: "node", Args: []string{entry, "stdio"}})
	ts := toolset(t, m, "everything")
	names := toolNames(listAll(t, ts))
	for _, want := range []string{"mcp__everything__echo", "mcp__everything__get-tiny-image", "mcp__everything__get-sum"} {
		if !containsString(names, want) {
			t.Fatalf("tools = %v, no %s", names, want)
		}
	}
	echo := findTool(t, ts, "mcp__everything__echo")
	if echo.Info().Kind != tool.KindRead || tool.Title(echo, tool.Call{}) != "Echo Tool" || !bytes.Contains(echo.Info().Parameters, []byte(`"message"`)) {
		t.Errorf("echo: info %+v, title %q", echo.Info(), tool.Title(echo, tool.Call{}))
	}
	wantOK(t, call(t, ts, "mcp__everything__echo", map[string]string{"message": "hello npm"}), "Echo: hello npm")
	if res := call(t, ts, "mcp__everything__get-sum", map[string]int{"a": 2, "b": 3}); res.IsError || !strings.Contains(res.Content, "5") {
		t.Errorf("get-sum = %+v", res)
	}

	res := call(t, ts, "mcp__everything__get-tiny-image", "{}")
	size := tinyImageSize(t, npmServerDir(entry))
	want := fmt.Sprintf("Here's the image you requested:\n[image image/png, %d bytes]\nThe image above is the MCP logo.", size)
	if res.IsError || res.Content != want {
		t.Errorf("get-tiny-image = %q, want %q", res.Content, want)
	}
	// Bad arguments: the server's validation error, as an error result.
	wantError(t, call(t, ts, "mcp__everything__echo", "{}"), "message")

	pids := stdioPIDs(m)
	if len(pids) != 1 {
		t.Fatalf("pids = %v", pids)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, pids...)
}

func npmServerDir(entry string) string { return filepath.Dir(entry) }

// tinyImageSize decodes the image get-tiny-image returns, from its source.
func tinyImageSize(t *testing.T, dist string) int {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dist, "tools", "get-tiny-image.js"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(src, []byte(`MCP_TINY_IMAGE = "`))
	b64, _, ok2 := bytes.Cut(rest, []byte(`"`))
	if !ok || !ok2 {
		t.Fatal("MCP_TINY_IMAGE not found")
	}
	img, err := base64.StdEncoding.DecodeString(string(b64))
	if err != nil {
		t.Fatal(err)
	}
	return len(img)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// startHTTPEverything runs server-everything with an HTTP transport on a
// free loopback port (env PORT) in its own process group, and kills the
// group when the test ends. It returns the base URL.
func startHTTPEverything(t *testing.T, entry, transport string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", entry, transport)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
		checkGone(t, pid)
		if t.Failed() {
			t.Logf("server-everything %s output:\n%s", transport, out.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			t.Fatalf("server-everything %s exited:\n%s", transport, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything %s does not listen on %s:\n%s", transport, addr, out.String())
		}
		// A third-party server started by npx: it gives no readiness notice
		// to wait for and its log lines are not a contract, so this waits
		// for its port (the test runs only with npm and its packages).
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestNPMEverythingStreamableHTTP(t *testing.T) {
	entry := npmServer(t, "server-everything")
	base := startHTTPEverything(t, entry, "streamableHttp")
	m := newManager(t, ServerConfig{
		Name: "web", Transport: "streamable-http", URL: base + "/mcp",
		Headers: map[string]string{"X-Test": "1"},
	})
	ts := toolset(t, m, "web")
	if !containsString(toolNames(listAll(t, ts)), "mcp__web__echo") {
		t.Fatal("no echo tool")
	}
	wantOK(t, call(t, ts, "mcp__web__echo", map[string]string{"message": "over http"}), "Echo: over http")
	res := call(t, ts, "mcp__web__get-structured-content", map[string]string{"location": "Chicago"})
	wantOK(t, res, "Light rain")
	if st := status(m, "web"); st.State != StateConnected || st.Transport != TransportStreamableHTTP {
		t.Errorf("status = %+v", st)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestNPMEverythingSSE(t *testing.T) {
	entry := npmServer(t, "server-everything")
	base := startHTTPEverything(t, entry, "sse")
	m := newManager(t, ServerConfig{Name: "old", Transport: "sse", URL: base + "/sse"})
	ts := toolset(t, m, "old")
	wantOK(t, call(t, ts, "mcp__old__echo", map[string]string{"message": "over sse"}), "Echo: over sse")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestNPMFilesystem(t *testing.T) {
	entry := npmServer(t, "server-filesystem")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, ServerConfig{Name: "fs", Command: "node", Args: []string{entry, root}})
	ts := toolset(t, m, "fs")
	read := findTool(t, ts, "mcp__fs__read_text_file")
	if read.Info().Kind != tool.KindRead {
		t.Errorf("read_text_file kind = %q", read.Info().Kind)
	}
	wantOK(t, call(t, ts, "mcp__fs__read_text_file", map[string]string{"path": filepath.Join(root, "hello.txt")}), "hello from the test")
	res := call(t, ts, "mcp__fs__read_text_file", map[string]string{"path": outside})
	wantError(t, res, "Access denied")
	if strings.Contains(res.Content, "secret") && !strings.Contains(res.Content, "secret.txt") {
		t.Errorf("outside file leaked: %q", res.Content)
	}
	pids := stdioPIDs(m)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, pids...)
}
