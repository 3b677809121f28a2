package acpagent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recordingModel is a fakeModel that keeps the user messages of each
// request it gets.
type recordingModel struct {
	*fakeModel
	mu   sync.Mutex
	reqs [][]string // per request, its user messages' text
}

func newRecordingModel(t *testing.T, answer string) *recordingModel {
	r := &recordingModel{fakeModel: &fakeModel{answer: answer, waiting: make(chan struct{})}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var in struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(body, &in) == nil && strings.HasSuffix(req.URL.Path, "/chat/completions") {
			var users []string
			for _, m := range in.Messages {
				if m.Role == "user" {
					users = append(users, string(m.Content))
				}
			}
			r.mu.Lock()
			r.reqs = append(r.reqs, users)
			r.mu.Unlock()
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		r.serve(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// requests are the user messages of each request so far (opencode
// also asks its model for a session title, in a request of its own).
func (r *recordingModel) requests() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.reqs...)
}

// The real opencode offers loadSession; continuing its child session
// loads it: the model's request for the new prompt carries the first
// prompt as opencode's own history, and the new prompt was sent alone
// (not the stored conversation as text).
func TestOpencodeContinuedChildIsLoaded(t *testing.T) {
	model := newRecordingModel(t, "Noted, the bird is a pelican.")
	oc := opencodeNode(t, "opencode", model.fakeModel, "")
	p := loadPool(t, oc)
	child, _ := delegateOnce(t, p, "Remember: the bird is a pelican.")
	if storedACPSession(t, p, child) == "" {
		t.Fatal("no ACP session id stored on the child")
	}
	before := len(model.requests())
	res, _ := continueSession(t, p, "opencode", child, "Which bird was it?")
	if res.Result.Output != "Noted, the bird is a pelican." {
		t.Errorf("output %q", res.Result.Output)
	}
	found := false
	for _, users := range model.requests()[before:] {
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
		t.Errorf("no model request for the new prompt among %q", model.requests()[before:])
	}
}
