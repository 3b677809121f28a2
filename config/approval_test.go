package config

import (
	"reflect"
	"testing"
)

func TestToolApproval(t *testing.T) {
	m := mustParse(t, `agents:
  main:
    model: test
    tool_approval:
      bash: deny
      "ask_*": ask
      "*": allow
  other:
    model: test
    tool_approval:
`)
	want := map[string]string{"bash": ApprovalDeny, "ask_*": ApprovalAsk, "*": ApprovalAllow}
	if got := m.Agents["main"].ToolApproval; !reflect.DeepEqual(got, want) {
		t.Errorf("ToolApproval = %v, want %v", got, want)
	}
	if got := m.Agents["other"].ToolApproval; got != nil {
		t.Errorf("null tool_approval = %v, want nil", got)
	}
}

func TestToolApprovalFor(t *testing.T) {
	policy := map[string]string{"bash": "deny", "ask_*": "ask", "ask_critic*": "allow", "*": "deny", "task": "allow"}
	for tool, want := range map[string]string{
		"bash":          "deny",  // exact
		"task":          "allow", // exact beats "*"
		"ask_helper":    "ask",   // pattern
		"ask_critic_v2": "allow", // the longest matching pattern
		"read_file":     "deny",  // "*"
	} {
		if got := ToolApprovalFor(policy, tool); got != want {
			t.Errorf("ToolApprovalFor(%s) = %s, want %s", tool, got, want)
		}
	}
	if got := ToolApprovalFor(nil, "anything"); got != ApprovalAllow {
		t.Errorf("no policy: %s, want allow", got)
	}
	a := &Agent{ToolApproval: map[string]string{"x": "ask"}}
	if a.ApprovalFor("x") != "ask" || a.ApprovalFor("y") != "allow" {
		t.Error("Agent.ApprovalFor")
	}
}

func TestToolApprovalErrors(t *testing.T) {
	lines := parseErr(t, `agents:
  main:
    model: test
    tool_approval:
      bash: alow
      "[": deny
      "": ask
      task: [allow]
  other:
    model: test
    tool_approval: [bash]
`)
	diffLines(t, lines, []string{
		`agentpool.yaml:5: agents.main.tool_approval.bash: unknown approval "alow" (did you mean "allow"?)`,
		`agentpool.yaml:6: agents.main.tool_approval.[: invalid tool pattern "[": syntax error in pattern`,
		`agentpool.yaml:7: agents.main.tool_approval: tool name must not be empty`,
		`agentpool.yaml:8: agents.main.tool_approval.task: expected a string, got a list`,
		`agentpool.yaml:11: agents.other.tool_approval: expected a mapping of tool names (or patterns such as "*") to allow, ask or deny, got a list`,
	})
}
