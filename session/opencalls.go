package session

import "github.com/agentpool/agentpool/model"

// OpenCalls returns the tool calls of msgs' last model turn that have no
// result yet, when the conversation ends with that turn (and maybe the
// results of its other calls): the calls a client runs itself (an AG-UI
// front end's tools), which end a run and wait, unanswered, for the next
// one (spawn.Invocation.ClientResults). Nil when the conversation ends
// otherwise. History would give these calls the error InterruptedResult.
func OpenCalls(msgs []Message) []model.Part {
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role == model.RoleTool {
		i--
	}
	if i < 0 || msgs[i].Role != model.RoleAssistant {
		return nil
	}
	return openOf(msgs[i].Message, msgs[i+1:])
}

// openOf returns the calls of assistant that the tool messages after it
// do not answer.
func openOf(assistant model.Message, after []Message) []model.Part {
	answered := map[string]bool{}
	for _, m := range after {
		for _, p := range m.Parts {
			if p.Kind == model.PartToolResult {
				answered[p.ToolCallID] = true
			}
		}
	}
	var out []model.Part
	for _, c := range assistant.ToolCalls() {
		if !answered[c.ToolCallID] {
			out = append(out, c)
		}
	}
	return out
}
