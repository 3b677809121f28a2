package opencode

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
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
	body := `{"providerID":"agentpool","modelID":"test","messageID":"msg_1a24d0984e4000U6hkzDVtG0MZ"}`
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

// shellYAML: worker runs commands; guarded's approval rules deny Bash;
// bare has no Bash tool.
const shellYAML = `
default_agent: worker
agents:
  worker:
    tools: [execution]
    tool_approval: {"*": allow}
    model: {type: scripted, turns: ["I saw it"]}
  guarded:
    tools: [execution]
    tool_approval: {Bash: deny}
    model: {type: scripted, turns: ["no"]}
  bare:
    model: {type: scripted, turns: ["no"]}
`

// TestShell: POST /session/{id}/shell (the TUI's !cmd) runs the command
// through the session agent's Bash tool in its workspace and answers the
// assistant message with the bash tool part and its output, which the
// transcript and the model's next turn then hold; approval rules apply;
// an agent without Bash, bad bodies and unknown sessions are refused.
func TestShell(t *testing.T) {
	noLeaks(t)
	ws := t.TempDir()
	m, err := config.Parse("shell.yaml", []byte(shellYAML))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Workspace: ws, Hooks: hook.New(hook.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	sid := str(createSession(t, base, "")["id"])
	cmd := func(c string) string { return `{"agent":"worker","command":` + strconv.Quote(c) + `}` }

	v := mustCall(t, 200, "POST", base+"/session/"+sid+"/shell", cmd("echo hi; echo there > made.txt"))
	mustMatchResponse(t, "post", "/session/{sessionID}/shell", "200", v)
	var tool map[string]any
	for _, part := range arr(get(v, "parts")) {
		if get(part, "type") == "tool" {
			tool = obj(part)
		}
	}
	if get(v, "info", "role") != "assistant" || tool == nil || get(tool, "tool") != "bash" || get(tool, "state", "status") != "completed" ||
		!strings.Contains(str(get(tool, "state", "output")), "hi") {
		t.Fatalf("shell answered %v", v)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "there\n" {
		t.Errorf("the command did not run in the workspace: %q %v", b, err)
	}
	ev.wait(func(e map[string]any) bool {
		return e["type"] == "message.part.updated" && get(e, "properties", "part", "type") == "tool" && get(e, "properties", "part", "state", "status") == "completed"
	}, 10*time.Second)

	// The model's next turn goes on after it.
	mustCall(t, 200, "POST", base+"/session/"+sid+"/message", promptBody("what did it say?"))
	stored, err := p.Store().Messages(t.Context(), sid)
	if err != nil || len(stored) != 5 || stored[1].Role != "assistant" || stored[2].Role != "tool" || !strings.Contains(stored[2].Parts[0].Text, "hi") {
		t.Fatalf("stored conversation %+v %v", stored, err)
	}

	// Approval rules apply: a denied command is an error part that says so.
	guarded := str(createSession(t, base, `{"agent":"guarded"}`)["id"])
	v = mustCall(t, 200, "POST", base+"/session/"+guarded+"/shell", `{"agent":"guarded","command":"touch denied.txt"}`)
	denied := false
	for _, part := range arr(get(v, "parts")) {
		denied = denied || get(part, "type") == "tool" && get(part, "state", "status") == "error"
	}
	if _, err := os.Stat(filepath.Join(ws, "denied.txt")); !denied || err == nil {
		t.Errorf("a denied command: %v (file: %v)", v, err)
	}

	bare := str(createSession(t, base, `{"agent":"bare"}`)["id"])
	if code, v := call(t, "POST", base+"/session/"+bare+"/shell", `{"agent":"bare","command":"true"}`); code != 400 || !strings.Contains(str(get(v, "data", "message")), "Bash") {
		t.Errorf("shell of an agent without Bash: %d %v", code, v)
	}
	for _, bad := range []string{`{}`, `{"agent":"worker"}`, `{"agent":"worker","command":"true","extra":1}`, `[`} {
		if code, v := call(t, "POST", base+"/session/"+sid+"/shell", bad); code != 400 || get(v, "name") != "BadRequest" {
			t.Errorf("shell with %s: %d %v", bad, code, v)
		}
	}
	if code, _ := call(t, "POST", base+"/session/ses_unknown00000000000000000000/shell", cmd("true")); code != 404 {
		t.Errorf("shell of an unknown session: %d", code)
	}
}

// TestShellWhileRunning: a session whose run goes on refuses a command
// with a 400 that says so.
func TestShellWhileRunning(t *testing.T) {
	noLeaks(t)
	_, base := newServer(t, newPool(t, slowYAML), Options{})
	ev := subscribe(t, base+"/event")
	sid := str(createSession(t, base, `{"agent":"slow"}`)["id"])
	mustCall(t, 204, "POST", base+"/session/"+sid+"/prompt_async", promptBody("go"))
	ev.wait(isType("message.part.delta", sid), 10*time.Second)
	code, v := call(t, "POST", base+"/session/"+sid+"/shell", `{"agent":"slow","command":"true"}`)
	if code != 400 || !strings.Contains(str(get(v, "data", "message")), "is running") {
		t.Errorf("shell of a running session: %d %v", code, v)
	}
	mustCall(t, 200, "POST", base+"/session/"+sid+"/abort", "")
	ev.wait(isType("session.idle", sid), 10*time.Second)
}
