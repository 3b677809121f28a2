package opencode

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
)

// TestDiskFullDuringRun (OpenCode): a prompt whose run finds the store
// full before its last writes is answered with the answer, and the
// session gets a session.error that names the store and the cause (its
// stream completed: nothing else says it failed); once there is room
// again the session reads error after the next run, never running.
func TestDiskFullDuringRun(t *testing.T) {
	servertest.NoLeaks(t)
	p, st := servertest.FaultyPool(t, `
agents:
  boss:
    model: {type: scripted, turns: ["the answer", "the answer"]}
`)
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")

	// A prompt takes n writes; the last few find the disk full (the
	// answer has been produced by then).
	clean := str(createSession(t, base, "")["id"])
	before := st.Writes()
	mustCall(t, 200, "POST", base+"/session/"+clean+"/message", promptBody("go"))
	n := st.Writes() - before
	full := str(createSession(t, base, "")["id"])
	st.FailAfter(n - 3)
	ans := mustCall(t, 200, "POST", base+"/session/"+full+"/message", promptBody("go"))
	if b, _ := json.Marshal(ans); !strings.Contains(string(b), "the answer") {
		t.Errorf("the prompt was not answered with the answer: %s", b)
	}
	e := ev.wait(isType("session.error", full), 10*time.Second)
	if msg := str(get(e, "properties", "error", "data", "message")); !strings.Contains(msg, "store faulty store: no space left on device") {
		t.Errorf("session.error %v does not name the store and the cause", e)
	}
	checkEvents(t, ev.events())

	st.Lift()
	mustCall(t, 200, "POST", base+"/session/"+clean+"/message", promptBody("again"))
	rec, err := p.Store().GetSession(context.Background(), full)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != session.StatusError {
		t.Errorf("the session reads %s once the store has room, want error", rec.Status)
	}
}
