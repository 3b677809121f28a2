package testmodel

import (
	"encoding/json"

	"github.com/agentpool/agentpool/model"
)

// agentPoolTurn is the response of the AgentPool form to the i-th request
// after a user prompt, as pydantic-ai's TestModel answers: the first calls
// the tools (every tool of the request with CallAll, else CallTools), with
// ToolArgs or arguments made from each tool's schema (Generate); later
// ones, or the first when there is nothing to call, answer with Text, or
// for a structured output a value made from its schema, or else a JSON
// object of the tool results so far ({tool: result}), or else a reply
// that quotes the prompt.
func (m *Model) agentPoolTurn(req *model.Request, i int) compiledTurn {
	if i == 0 {
		if t := m.toolTurn(req); len(t.ToolCalls) > 0 {
			return t
		}
	}
	text := m.cfg.Text
	if text == "" && req.Output != nil {
		b, _ := json.Marshal(Generate(req.Output.Schema, m.cfg.Seed))
		text = string(b)
	}
	if text == "" {
		text = toolSummary(req.Messages)
	}
	return compiledTurn{Turn: Turn{Text: text}}
}

// toolTurn is the turn that calls the tools.
func (m *Model) toolTurn(req *model.Request) compiledTurn {
	specs := make(map[string]json.RawMessage, len(req.Tools))
	for _, s := range req.Tools {
		specs[s.Name] = s.Parameters
	}
	names := m.cfg.CallTools
	if m.cfg.CallAll {
		names = make([]string, len(req.Tools))
		for i, s := range req.Tools {
			names[i] = s.Name
		}
	}
	var t compiledTurn
	for _, name := range names {
		args, ok := m.args[name]
		if !ok {
			args = "{}"
			if schema, offered := specs[name]; offered {
				b, _ := json.Marshal(Generate(schema, m.cfg.Seed))
				args = string(b)
			}
		}
		t.ToolCalls = append(t.ToolCalls, ToolCall{Name: name})
		t.args = append(t.args, args)
	}
	return t
}

// toolSummary returns the results of the tools called since the last
// prompt a user typed as a JSON object {tool name: result}, or "" when
// none was called. A result that is JSON is kept as JSON.
func toolSummary(msgs []model.Message) string {
	out := map[string]any{}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == model.RoleUser && !m.Synthetic {
			break
		}
		for _, p := range m.Parts {
			if p.Kind != model.PartToolResult || p.ToolName == "" {
				continue
			}
			if _, seen := out[p.ToolName]; seen {
				continue // the latest result of a tool wins
			}
			var v any
			if json.Valid([]byte(p.Text)) && json.Unmarshal([]byte(p.Text), &v) == nil {
				out[p.ToolName] = v
			} else {
				out[p.ToolName] = p.Text
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	b, _ := json.Marshal(out)
	return string(b)
}
