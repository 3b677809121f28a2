package agui

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
)

// stuckYAML: boss delegates to stuck, whose model blocks until its
// session is cancelled.
const stuckYAML = `
default_agent: boss
agents:
  boss:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: stuck, prompt: "work", description: "stuck work"}}]
        - text: "boss went on"
    tools: [{type: subagent}]
  stuck:
    model: {type: blocking}
`

// POST /sessions/{child}/cancel cancels the child alone: it ends aborted,
// the stream says the user cancelled it, and the run finishes with the
// boss's answer. Unknown, ended and wrong-method requests are errors.
func TestCancelChild(t *testing.T) {
	servertest.NoLeaks(t)
	started := make(chan string, 1)
	p := servertest.PoolWith(t, stuckYAML, pool.Options{Registry: servertest.BlockingRegistry(started)})
	_, ts := newServer(t, p, Options{})
	ran := make(chan servertest.Answer, 1)
	go func() { ran <- post(t, ts.URL+"/", runBody("thread-cancel", "go")) }()

	child := <-started
	a := servertest.PostJSON(t, ts.URL+"/sessions/"+child+"/cancel", "")
	if a.Code != 200 || !strings.Contains(a.Body, `"cancelled":true`) {
		t.Fatalf("cancel: %d %s", a.Code, a.Body)
	}
	// The child has ended by the answer.
	if c, err := p.Store().GetSession(context.Background(), child); err != nil || c.Status != session.StatusAborted {
		t.Fatalf("child: %v %v", c.Status, err)
	}
	run := <-ran
	evs := parseSSE(t, []byte(run.Body))
	if last := evs[len(evs)-1]; last["type"] != "RUN_FINISHED" {
		t.Fatalf("the run ended with %v", last)
	}
	if !strings.Contains(run.Body, "Cancelled by the user (from agui).") || !strings.Contains(run.Body, "boss went on") {
		t.Errorf("stream: %s", run.Body)
	}

	for _, c := range []struct {
		path string
		code int
	}{
		{"/sessions/" + child + "/cancel", 409},
		{"/sessions/ses_nope/cancel", 404},
	} {
		if a := servertest.PostJSON(t, ts.URL+c.path, ""); a.Code != c.code || !strings.Contains(a.Body, `"error"`) {
			t.Errorf("POST %s: %d %s", c.path, a.Code, a.Body)
		}
	}
	if a := servertest.Do(t, "GET", ts.URL+"/sessions/"+child+"/cancel", ""); a.Code != 405 {
		t.Errorf("GET cancel: %d %s", a.Code, a.Body)
	}
}
