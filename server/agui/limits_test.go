package agui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/server/httpsec/httpsectest"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

// patientYAML answers after more than a minute (two chunks 40 s apart).
const patientYAML = `
agents:
  patient:
    model: {type: scripted, delay: 40s, turns: [{text: "slow answer"}]}
`

// serveBubble serves s on a pipe listener inside the calling synctest
// bubble; the cleanup shuts it down.
func serveBubble(t *testing.T, s *Server) *httpsectest.Listener {
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

// runRequest is a raw run request with its whole body.
func runRequest(path, body string, hdr ...string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s",
		path, strings.Join(hdr, ""), len(body), body)
}

// TestSlowBodyIsCut: a client that sends half a body and stalls is
// answered 408 and disconnected after DefaultBodyTimeout, instead of
// holding the connection forever.
func TestSlowBodyIsCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		httpsectest.CheckStalledBody(t, serveBubble(t, New(servertest.Pool(t, nestedYAML), Options{})), "/", `{"threadId":`, DefaultBodyTimeout)
	})
}

// TestUnauthorizedBeforeBody: with a token, a request without it is
// answered 401 at once, without waiting for a body that never comes, and
// the connection is closed.
func TestUnauthorizedBeforeBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		httpsectest.CheckUnauthorizedBeforeBody(t, serveBubble(t, New(servertest.Pool(t, nestedYAML), Options{Token: "agui-token"})), "/")
	})
}

// TestConnectionCap: the server holds at most DefaultMaxConns connections;
// one more is accepted only when another closes.
func TestConnectionCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		httpsectest.CheckConnectionCap(t, serveBubble(t, New(servertest.Pool(t, nestedYAML), Options{})), DefaultMaxConns, "/healthz")
	})
}

// TestRunOutlivesBodyTimeout: the body deadline bounds reading the
// request, not the run streamed in answer.
func TestRunOutlivesBodyTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := serveBubble(t, New(servertest.Pool(t, patientYAML), Options{}))
		c := ln.Dial()
		defer c.Close()
		start := time.Now()
		httpsectest.Send(c, runRequest("/", runBody("t-patient", "take your time")))
		res, body, err := httpsectest.Response(c)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("run: %v %v", res, err)
		}
		if !strings.Contains(body, wire.TypeRunFinished) || !strings.Contains(body, "answer") || strings.Contains(body, "cancelled") {
			t.Errorf("the run did not finish: %s", tail(body))
		}
		if took := time.Since(start); took <= DefaultBodyTimeout {
			t.Errorf("the run took %s, want longer than the body timeout", took)
		}
	})
}

// TestThreadIDLength: a threadId longer than MaxThreadIDBytes is refused
// with 400 and a message that says why; one of that length is fine.
func TestThreadIDLength(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.Pool(t, nestedYAML)
	_, ts := newServer(t, p, Options{})
	a := post(t, ts.URL+"/", runBody(strings.Repeat("t", MaxThreadIDBytes+1), "hi"))
	if a.Code != http.StatusBadRequest || !strings.Contains(a.Body, fmt.Sprintf("threadId is longer than %d bytes", MaxThreadIDBytes)) {
		t.Errorf("long threadId: %d %s", a.Code, a.Body)
	}
	runOK(t, ts.URL+"/", runBody(strings.Repeat("t", MaxThreadIDBytes), "hi"))
}

// TestThreadTableBounded: the in-memory thread table keeps at most
// MaxThreads idle threads; a pruned thread is found again in the store
// (its session's metadata) and continues its session.
func TestThreadTableBounded(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.Pool(t, nestedYAML)
	s, ts := newServer(t, p, Options{MaxThreads: 2})
	first := runOK(t, ts.URL+"/", runBody("thread-a", "one"))
	for _, th := range []string{"thread-b", "thread-c", "thread-d"} {
		runOK(t, ts.URL+"/", runBody(th, "one"))
	}
	if n := s.threads.size(); n > 2 {
		t.Errorf("thread table holds %d threads, want at most 2", n)
	}
	ctx := context.Background()
	sa := rootOf(t, p.Store(), "thread-a")
	before, _ := p.Store().Messages(ctx, sa.ID)
	runOK(t, ts.URL+"/", runBody("thread-a", "two"))
	if again := rootOf(t, p.Store(), "thread-a"); again.ID != sa.ID {
		t.Fatalf("pruned thread got session %s, want %s", again.ID, sa.ID)
	}
	after, _ := p.Store().Messages(ctx, sa.ID)
	if len(after) <= len(before) || first[0]["threadId"] != "thread-a" {
		t.Errorf("pruned thread's second run: messages %d -> %d", len(before), len(after))
	}
	if n := s.threads.size(); n > 2 {
		t.Errorf("thread table holds %d threads, want at most 2", n)
	}
}
