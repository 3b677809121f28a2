package agui

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

// Issue 35's scene over AG-UI: a parallel team of three at work; the
// client messages member a (POST /sessions/{id}/message), which answers
// at its next turn, cancels b, and c completes; the lead's tool result
// names the three outcomes and the stream shows the message. Once the
// run has ended, a message to the finished member continues it in its
// session. Bad requests are errors.
func TestMessageTeamMember(t *testing.T) {
	servertest.NoLeaks(t)
	started := make(chan servertest.Started, 3)
	release := make(chan struct{})
	p := servertest.PoolWith(t, servertest.SteerTeamYAML, pool.Options{Registry: servertest.SteerRegistry(started, release)})
	_, ts := newServer(t, p, Options{})
	ran := make(chan servertest.Answer, 1)
	go func() { ran <- post(t, ts.URL+"/", runBody("thread-steer", "go")) }()

	m := servertest.SteerMembers(t, started)
	if a := servertest.PostJSON(t, ts.URL+"/sessions/"+m["b"]+"/cancel", ""); a.Code != 200 {
		t.Fatalf("cancel b: %d %s", a.Code, a.Body)
	}
	a := servertest.PostJSON(t, ts.URL+"/sessions/"+m["a"]+"/message", `{"text":"hurry up"}`)
	if a.Code != 202 || !strings.Contains(a.Body, `"status":"queued"`) || !strings.Contains(a.Body, m["a"]) {
		t.Fatalf("message a: %d %s", a.Code, a.Body)
	}
	close(release)
	run := <-ran
	evs := parseSSE(t, []byte(run.Body))
	if last := evs[len(evs)-1]; last["type"] != "RUN_FINISHED" {
		t.Fatalf("the run ended with %v", last)
	}
	if !strings.Contains(run.Body, `"name":"session_message"`) || !strings.Contains(run.Body, "hurry up") {
		t.Errorf("the stream does not show the message: %s", run.Body)
	}
	ctx := context.Background()
	team, err := p.Store().GetSession(ctx, m["a"])
	if err != nil {
		t.Fatal(err)
	}
	lead, err := p.Store().GetSession(ctx, team.ParentID)
	if err != nil {
		t.Fatal(err)
	}
	servertest.CheckSteerOutcomes(t, p.Store(), lead.ParentID, "agui")

	a = servertest.PostJSON(t, ts.URL+"/sessions/"+m["a"]+"/message", `{"text":"once more"}`)
	if a.Code != 200 || !strings.Contains(a.Body, `"status":"continued"`) || !strings.Contains(a.Body, `"output":"a got: once more"`) ||
		!strings.Contains(a.Body, `"stopReason":"completed"`) {
		t.Errorf("continue a: %d %s", a.Code, a.Body)
	}

	for _, c := range []struct {
		path, body string
		code       int
		says       string
	}{
		{"/sessions/" + m["a"] + "/message", `{"txt":"hi"}`, 400, "nothing else"},
		{"/sessions/" + m["a"] + "/message", `{"text":" "}`, 400, "text is required"},
		{"/sessions/" + m["a"] + "/message", `{"text":"hi"} {}`, 400, "nothing else"},
		{"/sessions/ses_nope/message", `{"text":"hi"}`, 404, "no session"},
		{"/sessions/" + lead.ParentID + "/message", `{"text":"hi"}`, 409, "a run of its thread"},
	} {
		if a := servertest.PostJSON(t, ts.URL+c.path, c.body); a.Code != c.code || !strings.Contains(a.Body, c.says) {
			t.Errorf("POST %s %s: %d %s", c.path, c.body, a.Code, a.Body)
		}
	}
	if a := servertest.Do(t, "POST", ts.URL+"/sessions/"+m["a"]+"/message", `{"text":"hi"}`, "Content-Type", "text/plain"); a.Code != 415 {
		t.Errorf("text/plain: %d %s", a.Code, a.Body)
	}
	if a := servertest.Do(t, "GET", ts.URL+"/sessions/"+m["a"]+"/message", ""); a.Code != 405 {
		t.Errorf("GET message: %d %s", a.Code, a.Body)
	}
}
