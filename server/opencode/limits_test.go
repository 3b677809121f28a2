package opencode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentpool/agentpool/server/httpsec/httpsectest"
)

// serveBubble serves a new Server (of a slowYAML pool) on a pipe listener inside the
// calling synctest bubble; the cleanup shuts it down.
func serveBubble(t *testing.T, opts Options) *httpsectest.Listener {
	t.Helper()
	if opts.Directory == "" {
		opts.Directory = "/work/project"
	}
	return serveServer(t, New(newPool(t, slowYAML), opts))
}

// serveServer serves s on a pipe listener inside the calling synctest
// bubble; the cleanup shuts it down.
func serveServer(t *testing.T, s *Server) *httpsectest.Listener {
	t.Helper()
	ln := httpsectest.NewListener()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln
}

// bubbleSession creates a session through ln and returns its id.
func bubbleSession(t *testing.T, ln *httpsectest.Listener) string {
	t.Helper()
	c := ln.Dial()
	defer c.Close()
	httpsectest.Send(c, "POST /session HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	res, body, err := httpsectest.Response(c)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("POST /session: %v %v %s", res, err, body)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	return str(v["id"])
}

// TestSlowBodyIsCut: a client that sends half a body and stalls is
// answered 408 and disconnected after DefaultBodyTimeout.
func TestSlowBodyIsCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		httpsectest.CheckStalledBody(t, serveBubble(t, Options{}), "/session", `{"title":`, DefaultBodyTimeout)
	})
}

// TestUnauthorizedBeforeBody: with a token, a request without it is
// answered 401 at once, without waiting for its body, and the connection
// is closed.
func TestUnauthorizedBeforeBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		httpsectest.CheckUnauthorizedBeforeBody(t, serveBubble(t, Options{Token: "oc-token"}), "/session")
	})
}

// TestConnectionCap: the server holds at most DefaultMaxConns connections;
// one more is accepted only when another closes.
func TestConnectionCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		httpsectest.CheckConnectionCap(t, serveBubble(t, Options{}), DefaultMaxConns, "/global/health")
	})
}

// TestEventStreamOutlivesBodyTimeout: the request deadline does not end
// an event stream: its heartbeats go on long after it.
func TestEventStreamOutlivesBodyTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := serveBubble(t, Options{})
		c := ln.Dial()
		defer c.Close()
		start := time.Now()
		httpsectest.Send(c, "GET /event HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET /event: %v %v", res, err)
		}
		// Not res.Body.Close: it would drain the endless stream; closing c
		// (deferred above) ends it.
		sc := bufio.NewScanner(res.Body)
		beats := 0
		for time.Since(start) < 3*DefaultBodyTimeout && sc.Scan() {
			if strings.HasPrefix(sc.Text(), ":") {
				beats++
			}
		}
		if time.Since(start) < 3*DefaultBodyTimeout {
			t.Fatalf("the event stream ended after %s (%d heartbeats): %v", time.Since(start), beats, sc.Err())
		}
	})
}

// TestPromptQueueBounded: a session holds at most
// DefaultMaxSessionPrompts prompts (its running one and those waiting),
// and the server's prompts at most MaxPromptBytes bytes, running ones
// included; past either, a prompt is refused with 429 and a message that
// says why. An abort empties the session's queue at once.
func TestPromptQueueBounded(t *testing.T) {
	noLeaks(t)
	p := newPool(t, `
agents:
  sloth:
    model: {type: scripted, delay: 1h, turns: [{text: "not soon"}]}
`)
	_, base := newServer(t, p, Options{})
	async := func(base, sid string) string { return base + "/session/" + sid + "/prompt_async" }

	sid := str(createSession(t, base, "")["id"])
	for i := range DefaultMaxSessionPrompts { // one runs, the others wait
		mustCall(t, http.StatusNoContent, "POST", async(base, sid), promptBody(fmt.Sprint("prompt ", i)))
	}
	for _, route := range []string{"/prompt_async", "/message"} {
		code, v := call(t, "POST", base+"/session/"+sid+route, promptBody("one too many"))
		msg := str(get(v, "data", "message"))
		if code != http.StatusTooManyRequests || get(v, "name") != "QueueFullError" || !strings.Contains(msg, fmt.Sprintf("%d prompts", DefaultMaxSessionPrompts)) {
			t.Fatalf("%s past the queue: %d %v", route, code, v) // (a queued /message would block)
		}
	}
	mustCall(t, http.StatusOK, "POST", base+"/session/"+sid+"/abort", "")
	mustCall(t, http.StatusNoContent, "POST", async(base, sid), promptBody("after the abort"))
	mustCall(t, http.StatusOK, "POST", base+"/session/"+sid+"/abort", "")

	// Bytes, over every session (a bound of 1 MiB here, 300 KiB prompts):
	// each session's first prompt runs, the others wait; all count.
	_, small := newServer(t, p, Options{MaxPromptBytes: 1 << 20})
	big := promptBody(strings.Repeat("x", 300<<10))
	a, b := str(createSession(t, small, "")["id"]), str(createSession(t, small, "")["id"])
	for _, s := range []string{a, a, b} { // 3 × 300 KiB held
		mustCall(t, http.StatusNoContent, "POST", async(small, s), big)
	}
	code, v := call(t, "POST", async(small, b), big)
	if code != http.StatusTooManyRequests || !strings.Contains(str(get(v, "data", "message")), "bound of 1048576 bytes") {
		t.Errorf("past the byte bound: %d %v", code, v)
	}
}
