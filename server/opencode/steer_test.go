package opencode

import (
	"context"
	"testing"
	"time"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
)

// Issue 35's scene from OpenCode: a parallel team of three at work; the
// user aborts member b (POST /session/{b}/abort) and prompts member a
// (prompt_async), which reads the prompt at its next turn, and c
// completes; the lead's tool result names the three outcomes and the
// root completes.
func TestSteerTeamMembers(t *testing.T) {
	noLeaks(t)
	started := make(chan servertest.Started, 3)
	release := make(chan struct{})
	p := servertest.PoolWith(t, servertest.SteerTeamYAML, pool.Options{Registry: servertest.SteerRegistry(started, release)})
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	root := str(createSession(t, base, "")["id"])
	mustCall(t, 204, "POST", base+"/session/"+root+"/prompt_async", promptBody("go"))
	m := servertest.SteerMembers(t, started)
	if v := mustCall(t, 200, "POST", base+"/session/"+m["b"]+"/abort", ""); v != true {
		t.Fatalf("abort b answered %v", v)
	}
	mustCall(t, 204, "POST", base+"/session/"+m["a"]+"/prompt_async", promptBody("hurry up"))
	close(release)
	ev.wait(isType("session.idle", root), time.Minute)
	ctx := context.Background()
	for sid, want := range map[string]session.Status{root: session.StatusCompleted, m["a"]: session.StatusCompleted,
		m["b"]: session.StatusAborted, m["c"]: session.StatusCompleted} {
		if rec, err := p.Store().GetSession(ctx, sid); err != nil || rec.Status != want {
			t.Errorf("%s (%s): %v %v, want %v", sid, rec.AgentName, rec.Status, err, want)
		}
	}
	servertest.CheckSteerOutcomes(t, p.Store(), root, "opencode")
	if txt := lastText(arr(mustCall(t, 200, "GET", base+"/session/"+root+"/message", ""))); txt != "lead done" {
		t.Errorf("root's last message %q", txt)
	}
}
