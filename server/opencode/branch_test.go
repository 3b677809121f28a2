package opencode

import (
	"strings"
	"testing"
	"time"
)

// TestFork: POST /session/{id}/fork copies the conversation before the
// named message (all of it without one) into a new root session, which
// session.created announces and which goes on by itself; the original
// keeps its messages. Unknown sessions and messages are refused.
func TestFork(t *testing.T) {
	noLeaks(t)
	p := newPool(t, `
agents:
  solo:
    model: {type: scripted, turns: ["an answer"]}
`)
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	sid := str(createSession(t, base, "")["id"])
	for _, q := range []string{"first question", "second question"} {
		mustCall(t, 200, "POST", base+"/session/"+sid+"/message", promptBody(q))
	}
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	if len(msgs) != 4 {
		t.Fatalf("%d messages before the fork, want 4", len(msgs))
	}
	second := str(get(msgs[2], "info", "id"))

	v := mustCall(t, 200, "POST", base+"/session/"+sid+"/fork", `{"messageID":"`+second+`"}`)
	mustMatchResponse(t, "post", "/session/{sessionID}/fork", "200", v)
	fid := str(get(v, "id"))
	if fid == "" || fid == sid || get(v, "parentID") != nil {
		t.Fatalf("fork answered %v", v)
	}
	ev.wait(func(e map[string]any) bool {
		return e["type"] == "session.created" && get(e, "properties", "info", "id") == fid
	}, 10*time.Second)
	forked := arr(mustCall(t, 200, "GET", base+"/session/"+fid+"/message", ""))
	if len(forked) != 2 || get(forked[0], "info", "role") != "user" || len(arr(get(forked[0], "parts"))) == 0 ||
		get(arr(get(forked[0], "parts"))[0], "text") != "first question" {
		t.Fatalf("the fork holds %d messages, want the first turn: %v", len(forked), forked)
	}
	// A cut at an assistant message keeps its turn's question.
	atAnswer := mustCall(t, 200, "POST", base+"/session/"+sid+"/fork", `{"messageID":"`+str(get(msgs[1], "info", "id"))+`"}`)
	if got := arr(mustCall(t, 200, "GET", base+"/session/"+str(get(atAnswer, "id"))+"/message", "")); len(got) != 1 || get(got[0], "info", "role") != "user" {
		t.Errorf("a fork at the first answer holds %v, want the first question", got)
	}
	mustCall(t, 200, "POST", base+"/session/"+fid+"/message", promptBody("third question"))
	if n := len(arr(mustCall(t, 200, "GET", base+"/session/"+fid+"/message", ""))); n != 4 {
		t.Errorf("the fork holds %d messages after its prompt, want 4", n)
	}
	if n := len(arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))); n != 4 {
		t.Errorf("the original holds %d messages after the fork's prompt, want 4", n)
	}

	whole := mustCall(t, 200, "POST", base+"/session/"+sid+"/fork", "")
	if n := len(arr(mustCall(t, 200, "GET", base+"/session/"+str(get(whole, "id"))+"/message", ""))); n != 4 {
		t.Errorf("a fork without messageID holds %d messages, want 4", n)
	}
	code, bad := call(t, "POST", base+"/session/"+sid+"/fork", `{"messageID":"msg_unknown"}`)
	if code != 400 || get(bad, "name") != "BadRequest" {
		t.Errorf("fork at an unknown message: %d %v", code, bad)
	}
	if code, _ := call(t, "POST", base+"/session/ses_unknown00000000000000000000/fork", ""); code != 404 {
		t.Errorf("fork of an unknown session: %d", code)
	}
}

// TestShareNotAvailable: share and unshare answer a 400 BadRequest whose
// message the TUI shows; an unknown session is a 404.
func TestShareNotAvailable(t *testing.T) {
	noLeaks(t)
	p := newPool(t, `
agents:
  solo:
    model: {type: scripted, turns: ["an answer"]}
`)
	_, base := newServer(t, p, Options{})
	sid := str(createSession(t, base, "")["id"])
	for _, method := range []string{"POST", "DELETE"} {
		code, v := call(t, method, base+"/session/"+sid+"/share", "")
		if code != 400 {
			t.Fatalf("%s share: %d %v", method, code, v)
		}
		mustMatchResponse(t, map[string]string{"POST": "post", "DELETE": "delete"}[method], "/session/{sessionID}/share", "400", v)
		if msg := str(get(v, "data", "message")); msg == "" || !strings.Contains(msg, "not available") {
			t.Errorf("%s share says %q", method, msg)
		}
		if code, _ := call(t, method, base+"/session/ses_unknown00000000000000000000/share", ""); code != 404 {
			t.Errorf("%s share of an unknown session: %d", method, code)
		}
	}
}

// TestInit: POST /session/{id}/init (the TUI's /init) runs the session's
// agent on the AGENTS.md prompt as its next message and answers true once
// the turn has ended; bad bodies and unknown sessions are refused.
func TestInit(t *testing.T) {
	noLeaks(t)
	p := newPool(t, `
agents:
  solo:
    model: {type: scripted, turns: ["AGENTS.md written"]}
`)
	_, base := newServer(t, p, Options{})
	sid := str(createSession(t, base, "")["id"])
	body := `{"providerID":"agentpool","modelID":"scripted","messageID":"msg_1a24d0984e4000U6hkzDVtG0MZ"}`
	for _, bad := range []string{`{}`, `{"providerID":"a","modelID":"b"}`, `{"providerID":"a","modelID":"b","messageID":"msg_x","extra":1}`, `[`} {
		if code, v := call(t, "POST", base+"/session/"+sid+"/init", bad); code != 400 || get(v, "name") != "BadRequest" {
			t.Errorf("init with %s: %d %v", bad, code, v)
		}
	}
	if code, _ := call(t, "POST", base+"/session/ses_unknown00000000000000000000/init", body); code != 404 {
		t.Errorf("init of an unknown session: %d", code)
	}
	v := mustCall(t, 200, "POST", base+"/session/"+sid+"/init", body)
	mustMatchResponse(t, "post", "/session/{sessionID}/init", "200", v)
	if v != true {
		t.Fatalf("init answered %v", v)
	}
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	if len(msgs) != 2 {
		t.Fatalf("%d messages after init, want the prompt and its answer", len(msgs))
	}
	if got := str(get(arr(get(msgs[0], "parts"))[0], "text")); !strings.Contains(got, "AGENTS.md") || get(msgs[0], "info", "id") != "msg_1a24d0984e4000U6hkzDVtG0MZ" {
		t.Errorf("init's message: %v %q", get(msgs[0], "info", "id"), got)
	}
	answered := false
	for _, part := range arr(get(msgs[1], "parts")) {
		answered = answered || get(part, "text") == "AGENTS.md written"
	}
	if !answered {
		t.Errorf("init's answer: %v", get(msgs[1], "parts"))
	}
}
