package servertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// SteerTeamYAML is issue 35's scene for the models of SteerRegistry: lead
// gives a parallel team of three one task; member a (gated) is to be
// messaged while it works, b (blocking) cancelled, and c (gated)
// completes once the test releases the gated members.
const SteerTeamYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: panel, prompt: review, description: Review}}]
        - text: "lead done"
    tools: [subagent]
  a: {model: {type: gated}, system_prompt: "You are member a."}
  b: {model: {type: blocking}, system_prompt: "You are member b."}
  c: {model: {type: gated}, system_prompt: "You are member c."}
teams:
  panel: {mode: parallel, members: [a, b, c]}
`

// SteerMembers waits until the three members of SteerTeamYAML have asked
// their models and returns their sessions by agent name.
func SteerMembers(t testing.TB, started <-chan Started) map[string]string {
	t.Helper()
	out := map[string]string{}
	timer := time.NewTimer(WaitBound)
	defer timer.Stop()
	for len(out) < 3 {
		select {
		case s := <-started:
			out[s.Agent] = s.Session
		case <-timer.C:
			t.Fatalf("servertest: only %d members started: %v", len(out), out)
		}
	}
	return out
}

// ResolveMembers fills in the sessions of members that reported none
// (their models ran on an engine's worker) from the store: the sessions
// of the team that root's session started, by agent.
func ResolveMembers(t testing.TB, st session.Store, root string, members map[string]string) {
	t.Helper()
	ctx := context.Background()
	teams, err := st.ListSessions(ctx, session.ListOptions{ParentID: root})
	if err != nil || len(teams) != 1 {
		t.Fatalf("servertest: the team's session under %s: %d, %v", root, len(teams), err)
	}
	kids, err := st.ListSessions(ctx, session.ListOptions{ParentID: teams[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		if members[k.AgentName] == "" {
			members[k.AgentName] = k.ID
		}
	}
}

// CheckSteerOutcomes checks, in the stored conversation of the root
// session of SteerTeamYAML, that the lead's tool result names each
// member's outcome: a answered the message "hurry up" sent from the front
// end by, b was cancelled by the user from by, c completed.
func CheckSteerOutcomes(t testing.TB, st session.Store, root, by string) {
	t.Helper()
	msgs, err := st.Messages(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	var result string
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == model.PartToolResult {
				result = p.Text
			}
		}
	}
	for _, want := range []string{
		"[a]", "a got: Message from the user (from " + by + "):", "hurry up",
		"[b] cancelled", "was cancelled by the user (from " + by + ")",
		"[c]", "c first",
	} {
		if !strings.Contains(result, want) {
			t.Errorf("the lead's tool result lacks %q: %q", want, result)
		}
	}
}
