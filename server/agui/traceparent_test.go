package agui

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/tracing/tracingtest"
)

// TestTraceparentParentsTheRun checks that a run request's W3C
// traceparent header makes the caller's span the parent of the run's root
// span, and that a run without one starts a trace of its own.
func TestTraceparentParentsTheRun(t *testing.T) {
	servertest.NoLeaks(t)
	p, rec := tracingtest.TracedPool(t, nestedYAML)
	_, ts := newServer(t, p, Options{})

	req, err := http.NewRequest("POST", ts.URL, strings.NewReader(runBody("traced", "hello")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("traceparent", tracingtest.Traceparent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v: %s", resp.StatusCode, err, body)
	}
	parseSSE(t, body)
	runOK(t, ts.URL, runBody("plain", "hello"))

	tracingtest.CheckRootParents(t, rec.Ended(), rootOf(t, p.Store(), "traced").ID, rootOf(t, p.Store(), "plain").ID)
}
