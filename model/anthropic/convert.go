package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/model"
)

// params converts req to a Messages request.
//
//   - System becomes the top-level system prompt.
//   - User text parts become text blocks; assistant text parts text blocks
//     and tool-call parts tool_use blocks (input: the call's JSON object).
//     Thinking parts are not sent back (they carry no signature).
//   - A role "tool" message becomes a user message of tool_result blocks
//     (tool_use_id, content, is_error).
//   - Consecutive messages of one role are merged into one message, so that
//     tool results and an injected user note travel together, results
//     first.
//   - Tools become custom tools with their JSON schema as input_schema.
func (m *Model) params(req *model.Request) (*messagesRequest, error) {
	p := &messagesRequest{Model: m.cfg.Model, MaxTokens: DefaultMaxTokens, Stream: true, StopSequences: m.cfg.Stop}
	if m.cfg.MaxTokens > 0 {
		p.MaxTokens = m.cfg.MaxTokens
	}
	if req.System != "" {
		p.System = []textBlock{{Type: "text", Text: req.System}}
	}
	if o := req.Output; o != nil {
		// Structured outputs: the answer follows the JSON schema.
		var schema map[string]any
		if err := json.Unmarshal(o.Schema, &schema); err != nil {
			return nil, fmt.Errorf("anthropic: output schema: %w", err)
		}
		p.OutputConfig = &outputConfig{Format: outputFormat{Type: "json_schema", Schema: o.Schema}}
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return nil, err
	}
	p.Messages = msgs
	for _, t := range req.Tools {
		schema, err := inputSchema(t)
		if err != nil {
			return nil, err
		}
		p.Tools = append(p.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return p, nil
}

func messages(in []model.Message) ([]message, error) {
	var (
		out      []message
		lastRole model.Role
	)
	for i, msg := range in {
		role := msg.Role
		var blocks []any
		for _, part := range msg.Parts {
			switch part.Kind {
			case model.PartText:
				if part.Text != "" {
					blocks = append(blocks, textBlock{Type: "text", Text: part.Text})
				}
			case model.PartThinking:
				// Not sent back: the API needs the signature of a
				// thinking block, which model.Part does not keep.
			case model.PartToolCall:
				if role != model.RoleAssistant {
					return nil, fmt.Errorf("anthropic: message %d: a %s message cannot carry tool calls", i, role)
				}
				blocks = append(blocks, toolUseBlock{Type: "tool_use", ID: part.ToolCallID, Name: part.ToolName, Input: toolInput(part.Args)})
			case model.PartToolResult:
				if role == model.RoleAssistant {
					return nil, fmt.Errorf("anthropic: message %d: an assistant message cannot carry tool results", i)
				}
				tr := toolResultBlock{Type: "tool_result", ToolUseID: part.ToolCallID, IsError: part.IsError}
				if part.Text != "" {
					tr.Content = []textBlock{{Type: "text", Text: part.Text}}
				}
				blocks = append(blocks, tr)
			default:
				return nil, fmt.Errorf("anthropic: message %d: unknown part kind %q", i, part.Kind)
			}
		}
		switch role {
		case model.RoleUser, model.RoleTool:
			role = model.RoleUser
		case model.RoleAssistant:
		default:
			return nil, fmt.Errorf("anthropic: message %d: unknown role %q", i, msg.Role)
		}
		if len(blocks) == 0 {
			continue
		}
		if len(out) > 0 && role == lastRole {
			last := &out[len(out)-1]
			last.Content = append(last.Content, blocks...)
			continue
		}
		out = append(out, message{Role: string(role), Content: blocks})
		lastRole = role
	}
	return out, nil
}

// toolInput is the input object of a tool_use block: the call's arguments
// when they are a JSON object, {} when empty, else {"input": value}.
func toolInput(args json.RawMessage) any {
	raw := strings.TrimSpace(string(args))
	if raw == "" || raw == "null" {
		return map[string]any{}
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return map[string]any{"input": raw}
	}
	if _, ok := v.(map[string]any); ok {
		return json.RawMessage(raw)
	}
	return map[string]any{"input": v}
}

// inputSchema converts a tool's JSON schema; an empty one is an object
// without properties. The type is always "object", and "required" keeps
// its names only.
func inputSchema(t model.ToolSpec) (map[string]any, error) {
	raw := strings.TrimSpace(string(t.Parameters))
	s := map[string]any{}
	if raw != "" && raw != "null" {
		if err := json.Unmarshal([]byte(raw), &s); err != nil || s == nil {
			return nil, fmt.Errorf("anthropic: tool %s: parameters are not a JSON schema object", t.Name)
		}
	}
	s["type"] = "object"
	if s["properties"] == nil {
		s["properties"] = map[string]any{}
	}
	if r, ok := s["required"]; ok {
		list, _ := r.([]any)
		var names []string
		for _, x := range list {
			if name, ok := x.(string); ok {
				names = append(names, name)
			}
		}
		if names == nil {
			delete(s, "required")
		} else {
			s["required"] = names
		}
	}
	return s, nil
}
