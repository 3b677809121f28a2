package spawn_test

import (
	"context"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
)

// delegate_to and ask_agent, AgentPool's names for delegation, spawn
// children like task: one child session each, mechanism task, the child's
// output as the result; ask_agent talks to agents only.
func TestAgentPoolDelegationTools(t *testing.T) {
	p := mustPool(t, `
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls:
            - {name: delegate_to, args: {agent_or_team_name: crew, prompt: "plan it"}}
            - {name: ask_agent, args: {agent_name: helper, message: "check it"}}
            - {name: ask_agent, args: {agent_name: crew, message: "teams are refused"}}
            - {name: delegate_to, args: {agent_or_team_name: nobody, prompt: x}}
            - {name: ask_agent, args: {agent_name: "", message: x}}
        - lead done
    tools: [subagent]
  helper: {model: {type: test, custom_output_text: helped}}
teams:
  crew: {mode: parallel, members: [helper]}
`, pool.Options{})
	res, evs := runPool(t, context.Background(), p, "lead", "go")
	if res.Result.Output != "lead done" {
		t.Fatalf("result = %+v", res.Result)
	}
	var names []string
	for _, s := range starts(res.SessionID, evs) {
		names = append(names, s.SourceName)
		if s.ParentSessionID == res.SessionID && s.SpawnMechanism != event.MechanismTask {
			t.Errorf("%s spawned with mechanism %s", s.SourceName, s.SpawnMechanism)
		}
	}
	if len(names) != 3 { // crew, its member helper, helper
		t.Errorf("spawned %v", names)
	}
	del := toolCompletes(res.SessionID, evs, "delegate_to")
	ask := toolCompletes(res.SessionID, evs, "ask_agent")
	if len(del) != 2 || len(ask) != 3 {
		t.Fatalf("%d delegate_to, %d ask_agent results", len(del), len(ask))
	}
	byInput := func(cs []event.ToolCallComplete, sub string) event.ToolCallComplete {
		for _, c := range cs {
			if contains(string(c.ToolInput), sub) {
				return c
			}
		}
		t.Fatalf("no call with %s", sub)
		return event.ToolCallComplete{}
	}
	if c := byInput(del, "plan it"); c.IsError || !contains(c.ToolResult, `"session_id"`, "helped") {
		t.Errorf("delegate_to crew = %+v", c)
	}
	if c := byInput(ask, "check it"); c.IsError || !contains(c.ToolResult, `"output":"helped"`) {
		t.Errorf("ask_agent helper = %+v", c)
	}
	if c := byInput(ask, "teams are refused"); !c.IsError || !contains(c.ToolResult, `"crew" is a team; use delegate_to`, "Agents: helper, lead") {
		t.Errorf("ask_agent crew = %+v", c)
	}
	if c := byInput(del, "nobody"); !c.IsError || !contains(c.ToolResult, `unknown agent or team "nobody"`, "crew, helper, lead") {
		t.Errorf("delegate_to nobody = %+v", c)
	}
	if c := byInput(ask, `"agent_name":""`); !c.IsError || !contains(c.ToolResult, "the agent name is required") {
		t.Errorf("ask_agent without a name = %+v", c)
	}
}
