package opencode

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/session"
)

// startSlow prompts the slow manifest and waits until its child streams.
func startSlow(t *testing.T, base string, ev *sseClient) (root, child string) {
	t.Helper()
	root = str(createSession(t, base, "")["id"])
	mustCall(t, 204, "POST", base+"/session/"+root+"/prompt_async", promptBody("go"))
	c := ev.wait(func(e map[string]any) bool {
		return e["type"] == "session.created" && get(e, "properties", "info", "parentID") == root
	}, 10*time.Second)
	child = str(get(c, "properties", "sessionID"))
	ev.wait(isType("message.part.delta", child), 10*time.Second)
	st := obj(mustCall(t, 200, "GET", base+"/session/status", ""))
	if get(st, root, "type") != "busy" || get(st, child, "type") != "busy" {
		t.Fatalf("status while running %v", st)
	}
	return root, child
}

func TestAbort(t *testing.T) {
	noLeaks(t)
	p := newPool(t, slowYAML)
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	root, child := startSlow(t, base, ev)

	if v := mustCall(t, 200, "POST", base+"/session/"+root+"/abort", ""); v != true {
		t.Fatalf("abort answered %v", v)
	}
	// abort returns once the run has wound down.
	if st := obj(mustCall(t, 200, "GET", base+"/session/status", "")); len(st) != 0 {
		t.Fatalf("status after abort %v", st)
	}
	ev.wait(isType("session.idle", root), 5*time.Second)
	evs := ev.events()
	checkEvents(t, evs)

	childIdle, partErr, rootErr, rootIdle := -1, -1, -1, -1
	for i, e := range evs {
		sid := get(e, "properties", "sessionID")
		switch {
		case sid == child && e["type"] == "session.idle":
			childIdle = i
		case sid == root && e["type"] == "message.part.updated" && get(e, "properties", "part", "state", "metadata", "sessionId") == child:
			if get(e, "properties", "part", "state", "status") == "error" {
				partErr = i
				// Words a person reads, not the tool's JSON result nor
				// Go's "context canceled".
				if msg := str(get(e, "properties", "part", "state", "error")); msg == "" || strings.HasPrefix(msg, "{") || strings.Contains(msg, "context canceled") {
					t.Errorf("aborted task part error %q", msg)
				}
			}
		case sid == root && e["type"] == "session.error":
			if get(e, "properties", "error", "name") != "MessageAbortedError" {
				t.Fatalf("root error %v", e)
			}
			if msg := str(get(e, "properties", "error", "data", "message")); msg == "" || strings.Contains(msg, "context canceled") {
				t.Errorf("root error message %q: want words a person reads", msg)
			}
			rootErr = i
		case sid == root && e["type"] == "session.idle":
			rootIdle = i
		}
	}
	if childIdle < 0 || partErr < 0 || rootErr < 0 || !(childIdle < partErr && partErr < rootIdle) {
		t.Fatalf("child idle %d, tool part error %d, root error %d, root idle %d", childIdle, partErr, rootErr, rootIdle)
	}
	ctx := context.Background()
	for _, sid := range []string{root, child} {
		rec, err := p.Store().GetSession(ctx, sid)
		if err != nil || rec.Status != session.StatusAborted {
			t.Fatalf("%s: %v %v", sid, rec.Status, err)
		}
	}
	// The root's last assistant message says it was aborted; nothing is
	// left running in the messages.
	for _, sid := range []string{root, child} {
		for _, m := range arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", "")) {
			for _, prt := range arr(get(m, "parts")) {
				if s := get(prt, "state", "status"); s == "running" || s == "pending" {
					t.Fatalf("%s: part left %v", sid, prt)
				}
			}
		}
	}
	// An aborted session takes the next prompt.
	ans := mustCall(t, 200, "POST", base+"/session/"+root+"/message", `{"agent":"broken","parts":[{"type":"text","text":"again"}]}`)
	mustMatchResponse(t, "post", "/session/{sessionID}/message", "200", ans)
	if get(ans, "info", "error", "name") != "UnknownError" {
		t.Fatalf("failed run answer %v", ans)
	}
	// Aborting an idle session is fine.
	if v := mustCall(t, 200, "POST", base+"/session/"+root+"/abort", ""); v != true {
		t.Fatalf("abort answered %v", v)
	}
}

// Aborting a child session cancels that child alone: it ends aborted, its
// tool part says the user cancelled it, and the root's run goes on to its
// answer.
func TestAbortChild(t *testing.T) {
	noLeaks(t)
	p := newPool(t, slowYAML)
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	root, child := startSlow(t, base, ev)
	// A subagent at work takes no prompt to store without a reply (a
	// prompt to run is a message to it: childmsg_test.go).
	body := `{"parts":[{"type":"text","text":"hello?"}],"noReply":true}`
	st, v := call(t, "POST", base+"/session/"+child+"/message", body)
	if st != 409 || get(v, "_tag") != "SessionBusyError" || get(v, "sessionID") != child {
		t.Fatalf("prompt to a running child: %d %v", st, v)
	}
	if v := mustCall(t, 200, "POST", base+"/session/"+child+"/abort", ""); v != true {
		t.Fatalf("abort answered %v", v)
	}
	// abort returns once the child has ended; the root still runs.
	ctx := context.Background()
	if rec, err := p.Store().GetSession(ctx, child); err != nil || rec.Status != session.StatusAborted {
		t.Fatalf("child after abort: %v %v", rec.Status, err)
	}
	ev.wait(isType("session.idle", root), 10*time.Second)
	rec, err := p.Store().GetSession(ctx, root)
	if err != nil || rec.Status != session.StatusCompleted {
		t.Fatalf("root: %v %v", rec.Status, err)
	}
	var partErr string
	for _, e := range ev.events() {
		switch {
		case get(e, "properties", "sessionID") == root && e["type"] == "session.error":
			t.Fatalf("root error %v", e)
		case e["type"] == "message.part.updated" && get(e, "properties", "part", "state", "metadata", "sessionId") == child &&
			get(e, "properties", "part", "state", "status") == "error":
			partErr = str(get(e, "properties", "part", "state", "error"))
		}
	}
	if !strings.Contains(partErr, "cancelled by the user (from opencode)") {
		t.Errorf("the task part's error %q", partErr)
	}
	// The root's answer came after the cancelled task.
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+root+"/message", ""))
	if txt := lastText(msgs); txt != "done" {
		t.Errorf("root's last message %q", txt)
	}
	// Aborting the ended child again is fine (OpenCode answers true).
	if v := mustCall(t, 200, "POST", base+"/session/"+child+"/abort", ""); v != true {
		t.Fatalf("abort answered %v", v)
	}
}

// Closing the server cancels runs in flight: the blocking prompt answers
// and no goroutine is left.
func TestCloseCancelsRuns(t *testing.T) {
	noLeaks(t)
	p := newPool(t, slowYAML)
	s, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	root := str(createSession(t, base, "")["id"])
	done := make(chan any, 1)
	go func() {
		var v any
		resp, err := http.Post(base+"/session/"+root+"/message", "application/json", strings.NewReader(promptBody("go")))
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
		}
		done <- v
	}()
	ev.wait(func(e map[string]any) bool {
		return e["type"] == "message.part.delta" && get(e, "properties", "sessionID") != root
	}, 10*time.Second)
	s.Close()
	select {
	case v := <-done:
		if get(v, "info", "error", "name") != "MessageAbortedError" {
			t.Fatalf("answer %v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking prompt did not answer after Close")
	}
}
