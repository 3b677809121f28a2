package opencode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/session"
)

// msgYAML: boss delegates to a slow child that answers a message with
// its second turn (a run without a message ends after its first).
const msgYAML = `
default_agent: boss
agents:
  boss:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: slow, prompt: "work slowly", description: "slow work"}}]
        - text: "done"
    tools: [{type: subagent}]
  slow:
    model:
      type: scripted
      delay: 30ms
      turns:
        - text: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty one two three four five six seven eight nine ten"
        - text: "got the message"
`

// A prompt to a child at work (POST /session/{child}/message) is a
// message it reads at its next turn: the answer is the child's answer
// to it, its transcript shows the message as a user message, and the
// root goes on.
func TestMessageRunningChild(t *testing.T) {
	noLeaks(t)
	p := newPool(t, msgYAML)
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	root, child := startSlow(t, base, ev)
	v := mustCall(t, 200, "POST", base+"/session/"+child+"/message", promptBody("also check the tests"))
	if txt := textOf(arr(get(v, "parts"))); txt != "got the message" || get(v, "info", "sessionID") != child {
		t.Fatalf("answer %v", v)
	}
	ev.wait(isType("session.idle", root), 10*time.Second)
	if rec, err := p.Store().GetSession(context.Background(), root); err != nil || rec.Status != session.StatusCompleted {
		t.Fatalf("root: %v %v", rec.Status, err)
	}
	// The child's transcript: its prompt, its first answer, the message
	// (a user message), its second answer.
	var roles []string
	for _, m := range arr(mustCall(t, 200, "GET", base+"/session/"+child+"/message", "")) {
		if txt := textOf(arr(get(m, "parts"))); txt != "" {
			roles = append(roles, str(get(m, "info", "role"))+":"+txt[:min(len(txt), 20)])
		}
	}
	want := []string{"user:work slowly", "assistant:one two three four f", "user:also check the tests", "assistant:got the message"}
	if len(roles) != len(want) {
		t.Fatalf("child transcript %q", roles)
	}
	for i := range want {
		if roles[i] != want[i] {
			t.Errorf("child transcript %q, want %q", roles, want)
			break
		}
	}
	// The live stream showed the message as a user message of the child.
	found := false
	for _, e := range ev.events() {
		if e["type"] == "message.part.updated" && get(e, "properties", "part", "sessionID") == child && get(e, "properties", "part", "text") == "also check the tests" {
			found = true
		}
	}
	if !found {
		t.Error("no message.part.updated with the message in the child")
	}
}

// finishedYAML: boss delegates to a quick child, then writes slowly.
const finishedYAML = `
default_agent: boss
agents:
  boss:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: quick, prompt: "be quick", description: "quick work"}}]
        - text: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty one two three four five six seven eight nine ten"
          delay: 30ms
    tools: [{type: subagent}]
  quick:
    model: {type: scripted, turns: [{text: "quick answer"}]}
`

// A prompt to a finished child while its tree's run goes on is refused
// with words that say why and what to do; once the run has ended, the
// same prompt continues the child in a run of its own.
func TestPromptFinishedChild(t *testing.T) {
	noLeaks(t)
	p := newPool(t, finishedYAML)
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	root := str(createSession(t, base, "")["id"])
	mustCall(t, 204, "POST", base+"/session/"+root+"/prompt_async", promptBody("go"))
	c := ev.wait(func(e map[string]any) bool {
		return e["type"] == "session.created" && get(e, "properties", "info", "parentID") == root
	}, 10*time.Second)
	child := str(get(c, "properties", "sessionID"))
	ev.wait(isType("session.idle", child), 10*time.Second)
	if !p.Runtime().Running(root) {
		t.Skip("the root ended before the test could prompt its finished child") // (its turn takes ~2 s)
	}
	st, v := call(t, "POST", base+"/session/"+child+"/message", promptBody("and more?"))
	if st != 409 || get(v, "_tag") != "SessionBusyError" || !strings.Contains(str(get(v, "message")), "the run of its tree goes on (session "+root) {
		t.Fatalf("prompt to a finished child of a running run: %d %v", st, v)
	}
	ev.wait(isType("session.idle", root), 10*time.Second)
	v = mustCall(t, 200, "POST", base+"/session/"+child+"/message", promptBody("and more?"))
	if txt := textOf(arr(get(v, "parts"))); txt != "quick answer" || get(v, "info", "sessionID") != child {
		t.Fatalf("answer %v", v)
	}
	msgs, err := p.Store().Messages(context.Background(), child)
	if err != nil || len(msgs) != 4 || msgs[2].Text() != "and more?" {
		t.Fatalf("child's conversation: %d messages, %v", len(msgs), err)
	}
}
