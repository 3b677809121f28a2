package agui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
)

// TestDiskFullDuringRun (AG-UI): a run whose store fills up before its
// last writes streams its answer and ends with RUN_ERROR (code
// store_error, the store's cause in the message), not RUN_FINISHED; once
// there is room again the thread's session reads error after the next
// run, never running.
func TestDiskFullDuringRun(t *testing.T) {
	p, st := servertest.FaultyPool(t, `
agents:
  boss:
    model: {type: scripted, turns: ["the answer"]}
`)
	_, ts := newServer(t, p, Options{})

	// A run takes n writes; the last few find the disk full (the answer
	// has been produced by then).
	runOK(t, ts.URL+"/", runBody("thread-clean", "go"))
	n := st.Writes()
	st.FailAfter(n - 3)
	evs := runOK(t, ts.URL+"/", runBody("thread-full", "go"))
	verifyStream(t, evs, "")
	var text strings.Builder
	for _, e := range evs {
		if e["type"] == wire.TypeTextMessageContent {
			text.WriteString(fmt.Sprint(e["delta"]))
		}
	}
	if !strings.Contains(text.String(), "the answer") {
		t.Errorf("the answer was not streamed: %q", text.String())
	}
	last := evs[len(evs)-1]
	if last["type"] != wire.TypeRunError || last["code"] != session.StoreErrorCode ||
		!strings.Contains(fmt.Sprint(last["message"]), "store faulty store: no space left on device") {
		t.Fatalf("last event %v, want RUN_ERROR with code %s and the store's cause", last, session.StoreErrorCode)
	}

	st.Lift()
	runOK(t, ts.URL+"/", runBody("thread-other", "go"))
	if s := rootOf(t, p.Store(), "thread-full"); s.Status != session.StatusError {
		t.Errorf("the thread's session reads %s once the store has room, want error", s.Status)
	}
}
