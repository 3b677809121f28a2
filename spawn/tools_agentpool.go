package spawn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/tool"
)

// AgentPool's names for delegation (its subagent toolset): delegate_to and
// ask_agent. They are callers of Spawn like task, so a delegation made
// under either name is the same child session with the same lifecycle
// events; only the argument names differ, as AgentPool defines them.

type delegateArgs struct {
	AgentOrTeamName string `json:"agent_or_team_name" jsonschema:"description=The agent or team to delegate the task to (see list_available_nodes)"`
	Prompt          string `json:"prompt" jsonschema:"description=Instructions for the agent or team to delegate to"`
}

type askArgs struct {
	AgentName string `json:"agent_name" jsonschema:"description=Name of the agent to ask (see list_available_nodes)"`
	Message   string `json:"message" jsonschema:"description=Message to send to the agent"`
}

var delegateTool = titled{tool.New("delegate_to",
	"Delegate a task to an agent or team and get its result. It runs in its own child session.",
	func(ctx context.Context, call tool.Call, a delegateArgs) (tool.Result, error) {
		return spawnNamed(ctx, call, "delegate_to", a.AgentOrTeamName, a.Prompt, false)
	}), func(call tool.Call) string {
	var a delegateArgs
	_ = json.Unmarshal(call.Args, &a)
	if a.AgentOrTeamName != "" {
		return "Delegate to " + a.AgentOrTeamName
	}
	return ""
}}

var askAgentTool = titled{tool.New("ask_agent",
	"Send a message to another agent and get its response. It runs in its own child session.",
	func(ctx context.Context, call tool.Call, a askArgs) (tool.Result, error) {
		return spawnNamed(ctx, call, "ask_agent", a.AgentName, a.Message, true)
	}), func(call tool.Call) string {
	var a askArgs
	_ = json.Unmarshal(call.Args, &a)
	if a.AgentName != "" {
		return "Ask " + a.AgentName
	}
	return ""
}}

// spawnNamed spawns the node called name with prompt, for the tool
// toolName; agentsOnly refuses teams (ask_agent talks to agents).
func spawnNamed(ctx context.Context, call tool.Call, toolName, name, prompt string, agentsOnly bool) (tool.Result, error) {
	inv := InvocationFrom(ctx)
	if inv == nil {
		return tool.Errorf("%s: no session in context", toolName), nil
	}
	available := func() string {
		var names []string
		for _, n := range inv.Runtime.Nodes() {
			if !agentsOnly || n.Type == "agent" {
				names = append(names, n.Name)
			}
		}
		return strings.Join(names, ", ")
	}
	kind := "agent or team"
	if agentsOnly {
		kind = "agent"
	}
	if strings.TrimSpace(name) == "" {
		return tool.Errorf("%s: the %s name is required; available: %s", toolName, kind, available()), nil
	}
	node, ok := inv.Runtime.Lookup(name)
	if !ok {
		return tool.Errorf("%s: unknown %s %q; available: %s", toolName, kind, name, available()), nil
	}
	if agentsOnly && node.SourceType() != event.SourceAgent {
		return tool.Errorf("%s: %q is a team; use delegate_to for teams. Agents: %s", toolName, name, available()), nil
	}
	child, err := Spawn(ctx, inv, Request{
		Node: node, Prompt: prompt, Description: fmt.Sprintf("%s %s", toolName, name), Mechanism: event.MechanismTask,
		ToolCallID: call.ID,
	})
	if err != nil {
		return tool.Errorf("%s: %v%s", toolName, err, limitHint(err)), nil
	}
	return childResult(child), nil
}
