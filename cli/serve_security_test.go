package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// TestServeRefusesOpenBindWithoutToken: for every HTTP server, a
// non-loopback address without a token is refused before anything
// listens.
func TestServeRefusesOpenBindWithoutToken(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	for _, server := range []string{"agui", "opencode", "web", "a2a"} {
		for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
			r := runCLIEnv(t, dir, []string{httpsec.EnvToken + "="}, "serve", server, "--db", ":memory:", "--addr", addr)
			if r.code == 0 || !strings.Contains(r.stderr, httpsec.EnvToken) || !strings.Contains(r.stderr, "--token") {
				t.Errorf("serve %s --addr %s without a token: exit %d, stderr %q", server, addr, r.code, r.stderr)
			}
			if strings.Contains(r.stderr, "listening") {
				t.Errorf("serve %s --addr %s listened: %s", server, addr, r.stderr)
			}
		}
	}
}

// runCLIEnv is runCLI with extra environment variables.
func runCLIEnv(t *testing.T, dir string, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(cliBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{out.String(), errb.String(), code}
}

// TestSecretsNeverLeak runs the AG-UI server with a server token and two
// provider keys (one in the manifest, one in the environment) against a
// provider that echoes the key it gets in its error message; then a CLI
// run with the same keys. The keys and the token (and a wrong token a
// client sent) appear nowhere: not in the logs, the event streams, the
// HTTP answers, the errors, or the database files.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	const (
		inlineKey  = "sk-inline-7f3a9c2e51d84b06a1e9"
		envKey     = "sk-env-4b8d0e6f2a9c7e1d3f50"
		token      = "srv-token-b1946ac92492d2347c62"
		wrongToken = "wrong-token-0cc175b9c0f1b6a8"
	)
	secrets := []string{inlineKey, envKey, token, wrongToken}

	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		mu.Lock()
		seen[strings.TrimPrefix(auth, "Bearer ")] = true
		mu.Unlock()
		// Like a real provider, but echoing the whole key.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s. You passed header %q.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			strings.TrimPrefix(auth, "Bearer "), auth)
	}))
	defer provider.Close()

	dir := t.TempDir()
	manifest := fmt.Sprintf(`
default_agent: boss
agents:
  boss:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: worker, prompt: "go"}}]
        - "boss done"
    tools: [subagent]
  worker:
    model: {type: openai, model: gpt-test, base_url: %[1]s/v1, api_key_env: SECRET_TEST_KEY}
  direct:
    model: {type: openai, model: gpt-test, base_url: %[1]s/v1, api_key: %[2]s}
`, provider.URL, inlineKey)
	if err := os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"SECRET_TEST_KEY=" + envKey, httpsec.EnvToken + "=" + token, "OPENAI_API_KEY="}

	// The server.
	cmd := exec.Command(cliBinary(t), "serve", "agui", "-c", "agentpool.yaml", "--db", "serve.db", "--addr", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir()), env...)
	var stdout lockedBuf
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var stderr lockedBuf
	addrCh := make(chan string, 1)
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(errPipe)
		re := regexp.MustCompile(`agui listening on (http://\S+)`)
		for sc.Scan() {
			stderr.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrCh <- m[1]
			}
		}
	}()
	var base string
	select {
	case base = <-addrCh:
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not start:\n%s", stderr.String())
	}

	var answers []string // every HTTP answer the clients got
	call := func(method, path, auth, body string) (int, string) {
		req, err := http.NewRequestWithContext(context.Background(), method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		answers = append(answers, fmt.Sprint(res.Header)+"\n"+string(b))
		return res.StatusCode, string(b)
	}
	runBody := func(thread string) string {
		return fmt.Sprintf(`{"threadId":%q,"runId":"r-%s","messages":[{"id":"m1","role":"user","content":"Hello"}]}`, thread, thread)
	}
	if code, _ := call("GET", "/agents", "", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _ := call("POST", "/", wrongToken, runBody("t0")); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	if code, body := call("POST", "/", token, runBody("t1")); code != 200 || !strings.Contains(body, "RUN_FINISHED") || !strings.Contains(body, "[redacted]") {
		t.Errorf("delegating run: %d\n%s", code, body)
	}
	if code, body := call("POST", "/agents/direct", token, runBody("t2")); code != 200 || !strings.Contains(body, "RUN_ERROR") || !strings.Contains(body, "401") {
		t.Errorf("direct run: %d\n%s", code, body)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	<-stderrDone

	// A CLI run with the same keys.
	cli := runCLIEnv(t, dir, env, "run", "-c", "agentpool.yaml", "--db", "run.db", "--output", "jsonl", "hello")
	direct := runCLIEnv(t, dir, env, "run", "-c", "agentpool.yaml", "--agent", "direct", "--db", "run.db", "hello")
	if direct.code == 0 {
		t.Errorf("the direct run succeeded against a provider that refuses every key")
	}

	mu.Lock()
	if !seen[inlineKey] || !seen[envKey] {
		t.Fatalf("the provider never got both keys (got %v): the test proves nothing", seen)
	}
	mu.Unlock()

	// Everything the runs left behind.
	where := map[string]string{
		"server stderr (log)": stderr.String(),
		"server stdout":       stdout.String(),
		"HTTP answers":        strings.Join(answers, "\n"),
		"run stdout (events)": cli.stdout,
		"run stderr":          cli.stderr,
		"direct run stdout":   direct.stdout,
		"direct run stderr":   direct.stderr,
	}
	for _, db := range []string{"serve.db", "run.db"} {
		files, _ := filepath.Glob(filepath.Join(dir, db+"*"))
		// The stores' lock files are in a directory next to the database.
		locks, _ := filepath.Glob(filepath.Join(dir, db+".instances", "*"))
		for _, f := range append(slices.DeleteFunc(files, isDir), locks...) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			where["file "+filepath.Base(f)] = string(b)
		}
		where["events of "+db] = storedEvents(t, filepath.Join(dir, db))
	}
	if !strings.Contains(where["events of serve.db"], "[redacted]") {
		t.Errorf("the stored events hold no provider error: nothing was checked\n%s", where["events of serve.db"])
	}
	for name, text := range where {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				i := strings.Index(text, s)
				t.Errorf("%s holds the secret %s…: …%s…", name, s[:8], text[max(0, i-80):min(len(text), i+len(s)+40)])
			}
		}
	}
}

// storedEvents returns every stored session and event of a database as
// JSON lines.
func storedEvents(t *testing.T, path string) string {
	t.Helper()
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	all, err := st.ListSessions(ctx, session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range all {
		fmt.Fprintf(&b, "%+v\n", s)
		recs, err := st.Events(ctx, s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			j, _ := event.Marshal(r.Event)
			b.Write(append(j, '\n'))
		}
		msgs, err := st.Messages(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			fmt.Fprintf(&b, "%+v\n", m)
		}
	}
	return b.String()
}

// lockedBuf is a concurrency-safe buffer.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
