package acpagent_test

import (
	"strings"
	"testing"

	"github.com/agentpool/agentpool/internal/opencodetest"
)

// The real opencode offers loadSession; continuing its child session
// loads it: the model's request for the new prompt carries the first
// prompt as opencode's own history, and the new prompt was sent alone
// (not the stored conversation as text).
func TestOpencodeContinuedChildIsLoaded(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	model := opencodetest.NewModel(t, "Noted, the bird is a pelican.")
	oc := opencodeNode(t, "opencode", model, "")
	p := loadPool(t, oc)
	child, _ := delegateOnce(t, p, "Remember: the bird is a pelican.")
	if storedACPSession(t, p, child) == "" {
		t.Fatal("no ACP session id stored on the child")
	}
	before := len(model.UserMessages())
	res, _ := continueSession(t, p, "opencode", child, "Which bird was it?")
	if res.Result.Output != "Noted, the bird is a pelican." {
		t.Errorf("output %q", res.Result.Output)
	}
	found := false
	for _, users := range model.UserMessages()[before:] {
		if len(users) == 0 || !strings.Contains(users[len(users)-1], "Which bird was it?") {
			continue // the title request, or another
		}
		found = true
		if len(users) != 2 || !strings.Contains(users[0], "Remember: the bird is a pelican.") {
			t.Errorf("the continued prompt's request has user messages %q: the session was not loaded", users)
		} else if strings.Contains(users[1], "The conversation so far") {
			t.Errorf("the new prompt carried the conversation as text: %q", users[1])
		}
	}
	if !found {
		t.Errorf("no model request for the new prompt among %q", model.UserMessages()[before:])
	}
}
