package cli

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// TestServeMaxConns: --max-conns bounds the connections an HTTP server
// holds; a client past it is answered once another connection closes.
func TestServeMaxConns(t *testing.T) {
	for _, server := range []string{"agui", "opencode", "web", "a2a"} {
		t.Run(server, func(t *testing.T) {
			base := startHTTPServer(t, server, "--max-conns", "1")
			held, err := net.Dial("tcp", base)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			if _, err := held.Write([]byte("GET /")); err != nil { // half a request: the server holds it
				t.Fatal(err)
			}
			answered := make(chan int, 1)
			go func() {
				c := http.Client{Timeout: 30 * time.Second}
				res, err := c.Get("http://" + base + "/nowhere")
				if err != nil {
					answered <- 0
					return
				}
				res.Body.Close()
				answered <- res.StatusCode
			}()
			select {
			case code := <-answered:
				t.Fatalf("a second connection was answered (%d) while the only one allowed was held", code)
			case <-time.After(500 * time.Millisecond):
			}
			held.Close()
			if code := <-answered; code != http.StatusNotFound {
				t.Fatalf("after the held connection closed: %d, want 404", code)
			}
		})
	}
}

// startHTTPServer runs `agentpool serve SERVER` on a free loopback port
// with args and returns its host:port; the cleanup stops it.
func startHTTPServer(t *testing.T, server string, args ...string) string {
	t.Helper()
	return startHTTPServerIn(t, t.TempDir(), server, args...)
}

// startHTTPServerIn is startHTTPServer with dir as the server's working
// directory (its workspace).
func startHTTPServerIn(t *testing.T, dir, server string, args ...string) string {
	t.Helper()
	cmd := exec.Command(cliBinary(t), append([]string{"serve", server, "--db", ":memory:", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir(), "AGENTPOOL_SERVER_TOKEN=")
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		re := regexp.MustCompile(server + ` listening on http://(\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	select {
	case a := <-addr:
		return a
	case <-time.After(60 * time.Second):
		t.Fatalf("serve %s did not start", server)
	}
	return ""
}

// TestServeWeb: `serve web` serves the page at / beside the OpenCode API.
func TestServeWeb(t *testing.T) {
	base := "http://" + startHTTPServer(t, "web")
	for _, c := range []struct{ path, ctype string }{
		{"/", "text/html; charset=utf-8"},
		{"/ui/app.js", "text/javascript; charset=utf-8"},
		{"/global/health", "application/json"},
	} {
		res, err := http.Get(base + c.path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != c.ctype {
			t.Errorf("GET %s: %d %q", c.path, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
}

// TestServeTemporalUnreachable: a server on a manifest that names the
// Temporal engine submits its sessions there: a frontend it cannot reach
// is an error at start, before it listens, not a server that runs the
// sessions itself.
func TestServeTemporalUnreachable(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	manifest := dir + "/pool.yaml"
	os.WriteFile(manifest, []byte("execution: {engine: temporal, address: 127.0.0.1:1}\nagents:\n  a:\n    model: {type: test}\n"), 0o644)
	for _, server := range []string{"agui", "opencode", "web", "a2a", "acp"} {
		args := []string{"serve", server, "-c", manifest, "--db", ":memory:"}
		if server != "acp" {
			args = append(args, "--addr", "127.0.0.1:0")
		}
		r := runCLI(t, dir, args...)
		if r.code == 0 || !regexp.MustCompile(`temporal at 127\.0\.0\.1:1: `).MatchString(r.stderr) || regexp.MustCompile(`listening on`).MatchString(r.stderr) {
			t.Errorf("serve %s: exit %d\n%s", server, r.code, r.stderr)
		}
	}
}
