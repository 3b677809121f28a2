package opencode

import (
	"testing"

	"github.com/agentpool/agentpool/tracing/tracingtest"
)

// TestTraceparentParentsTheRun checks that a prompt's W3C traceparent
// header makes the caller's span the parent of the run's root span, and
// that a prompt without one starts a trace of its own.
func TestTraceparentParentsTheRun(t *testing.T) {
	noLeaks(t)
	p, rec := tracingtest.TracedPool(t, nestedManifest(t))
	_, base := newServer(t, p, Options{})

	rid := str(createSession(t, base, "")["id"])
	mustCall(t, 200, "POST", base+"/session/"+rid+"/message", promptBody("Write a note about nested teams"),
		"traceparent", tracingtest.Traceparent)
	other := str(createSession(t, base, "")["id"])
	mustCall(t, 200, "POST", base+"/session/"+other+"/message", promptBody("again"))

	tracingtest.CheckRootParents(t, rec.Ended(), rid, other)
}
