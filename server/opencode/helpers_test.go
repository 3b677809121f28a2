package opencode

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// slowYAML: boss delegates to a slow child (the abort tests); broken
// fails.
const slowYAML = `
default_agent: boss
agents:
  boss:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: slow, prompt: "work slowly", description: "slow work"}}]
        - text: "done"
    tools: [{type: subagent}]
  slow:
    model:
      type: scripted
      delay: 30ms
      turns:
        - text: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty one two three four five six seven eight nine ten"
  broken:
    model: {type: scripted, turns: [{text: "partial ", error: "upstream exploded"}]}
`

// nestedManifest is examples/nested.yaml (else the AgentPool-style
// example): delegation through a task, teams and workers.
func nestedManifest(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"../../examples/nested.yaml", "../../examples/agentpool-style.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
	}
	t.Fatal("no nested example manifest")
	return ""
}

// noLeaks checks, after every other cleanup of t, that no goroutine
// started during the test is left.
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		goleak.VerifyNone(t, opt)
	})
}

func newPool(t *testing.T, src string) *pool.Pool {
	t.Helper()
	m, err := config.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// newServer serves p; cleanup closes the server (ending runs and event
// streams) before the HTTP server.
func newServer(t *testing.T, p *pool.Pool, opts Options) (*Server, string) {
	t.Helper()
	if opts.Directory == "" {
		opts.Directory = "/work/project"
	}
	if opts.Version == "" {
		opts.Version = "test"
	}
	s := New(p, opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(s.Close)
	return s, ts.URL
}

// call does one request and decodes a JSON answer (nil when empty).
func call(t *testing.T, method, url, body string, hdr ...string) (int, any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: Content-Type %q, body %s", method, url, ct, b)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s %s: %v: %s", method, url, err, b)
	}
	return resp.StatusCode, v
}

// mustCall is call that wants a status.
func mustCall(t *testing.T, want int, method, url, body string, hdr ...string) any {
	t.Helper()
	st, v := call(t, method, url, body, hdr...)
	if st != want {
		t.Fatalf("%s %s: status %d, want %d: %v", method, url, st, want, v)
	}
	return v
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func arr(v any) []any {
	a, _ := v.([]any)
	return a
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// get digs a path of keys out of decoded JSON.
func get(v any, keys ...string) any {
	for _, k := range keys {
		v = obj(v)[k]
	}
	return v
}

// sseClient reads an event stream in the background.
type sseClient struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	raw    []string
	evs    []map[string]any
	wake   chan struct{}
}

// subscribe opens url (/event or /global/event) and waits for its first
// frame.
func subscribe(t *testing.T, url string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		resp.Body.Close()
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c := &sseClient{t: t, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	go func() {
		defer close(c.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var frame []string
		for sc.Scan() {
			line := sc.Text()
			if line != "" {
				frame = append(frame, line)
				continue
			}
			if len(frame) == 0 {
				continue
			}
			f := frame
			frame = nil
			if strings.HasPrefix(f[0], ":") {
				continue
			}
			c.mu.Lock()
			c.raw = append(c.raw, strings.Join(f, "\n"))
			var e map[string]any
			if len(f) == 1 && strings.HasPrefix(f[0], "data: ") && json.Unmarshal([]byte(f[0][6:]), &e) == nil {
				c.evs = append(c.evs, e)
			} else {
				c.evs = append(c.evs, map[string]any{"type": "<bad frame>", "raw": strings.Join(f, "\n")})
			}
			c.mu.Unlock()
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(c.close)
	c.wait(func(e map[string]any) bool { return true }, 5*time.Second)
	return c
}

func (c *sseClient) close() {
	c.cancel()
	<-c.done
}

func (c *sseClient) events() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.evs...)
}

// wait returns the first event that matches, waiting up to d.
func (c *sseClient) wait(match func(map[string]any) bool, d time.Duration) map[string]any {
	c.t.Helper()
	return c.waitN(match, 1, d)[0]
}

// waitN returns the first n events that match, waiting up to d: it looks
// again at each event the stream delivers (its wake notice).
func (c *sseClient) waitN(match func(map[string]any) bool, n int, d time.Duration) []map[string]any {
	c.t.Helper()
	matching := func() []map[string]any {
		var got []map[string]any
		for _, e := range c.events() {
			if match(e) {
				if got = append(got, e); len(got) == n {
					return got
				}
			}
		}
		return nil
	}
	deadline := time.After(d)
	for {
		if got := matching(); got != nil {
			return got
		}
		select {
		case <-c.wake:
		case <-c.done:
			if got := matching(); got != nil {
				return got
			}
			c.t.Fatalf("event stream ended before the awaited events (%d events)", len(c.events()))
		case <-deadline:
			c.t.Fatalf("awaited events did not come in %s (%d events)", d, len(c.events()))
		}
	}
}

// isType matches events of a type in a session.
func isType(typ, sid string) func(map[string]any) bool {
	return func(e map[string]any) bool {
		return e["type"] == typ && (sid == "" || get(e, "properties", "sessionID") == sid)
	}
}

// refName is the reference component of an event type.
var refName = map[string]string{
	"server.connected":     "EventServerConnected",
	"session.created":      "EventSessionCreated",
	"session.updated":      "EventSessionUpdated",
	"session.deleted":      "EventSessionDeleted",
	"session.status":       "EventSessionStatus",
	"session.idle":         "EventSessionIdle",
	"session.error":        "EventSessionError",
	"message.updated":      "EventMessageUpdated",
	"message.part.updated": "EventMessagePartUpdated",
	"message.part.delta":   "EventMessagePartDelta",
	"message.removed":      "EventMessageRemoved",
	"todo.updated":         "EventTodoUpdated",
	"permission.asked":     "EventPermissionAsked",
	"permission.replied":   "EventPermissionReplied",
}

// checkEvents validates every event against opencode's schema of its
// type and checks that event ids ascend.
func checkEvents(t *testing.T, evs []map[string]any) {
	t.Helper()
	prev := ""
	for i, e := range evs {
		name, ok := refName[str(e["type"])]
		if !ok {
			t.Fatalf("event %d: unexpected type %v", i, e["type"])
		}
		mustMatch(t, name, e)
		id := str(e["id"])
		if id <= prev {
			t.Fatalf("event %d: id %s does not ascend after %s", i, id, prev)
		}
		prev = id
	}
}

func createSession(t *testing.T, base, body string) map[string]any {
	t.Helper()
	return createSessionIn(t, base, "", body)
}

// createSessionIn creates a session in a directory ("": the server's).
func createSessionIn(t *testing.T, base, dir, body string) map[string]any {
	t.Helper()
	if body == "" {
		body = "{}"
	}
	u := base + "/session"
	if dir != "" {
		u += "?directory=" + dir
	}
	s := obj(mustCall(t, 200, "POST", u, body))
	mustMatch(t, "Session", s)
	return s
}

func promptBody(text string) string {
	b, _ := json.Marshal(map[string]any{"parts": []any{map[string]any{"type": "text", "text": text}}})
	return string(b)
}
