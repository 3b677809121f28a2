package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/model"
)

// params converts req to a Chat Completions request.
//
//   - System becomes the first message (role "system").
//   - A user message becomes one user message with its text parts joined.
//   - An assistant message keeps its text as content and its tool-call
//     parts as tool_calls; thinking parts are not sent back.
//   - Every tool_result part (role "tool") becomes a tool message with its
//     tool_call_id; text parts of such a message follow as a user message.
//   - Tools become function tools with their JSON schema as parameters.
func (m *Model) params(req *model.Request) (*chatRequest, error) {
	p := &chatRequest{
		Model:         m.cfg.Model,
		Stream:        true,
		StreamOptions: &streamOptions{IncludeUsage: true},
		Temperature:   m.cfg.Temperature,
	}
	if m.cfg.MaxTokens > 0 {
		if m.ep.Official {
			p.MaxCompletionTokens = m.cfg.MaxTokens
		} else {
			p.MaxTokens = m.cfg.MaxTokens
		}
	}
	m.settings(p)
	if o := req.Output; o != nil {
		schema, err := checkJSON(o.Schema)
		if err != nil {
			return nil, fmt.Errorf("output schema: %w", err)
		}
		p.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: jsonSchema{Name: o.Name, Description: o.Description, Schema: schema}}
	}
	msgs, err := messages(req)
	if err != nil {
		return nil, err
	}
	p.Messages = msgs
	for _, t := range req.Tools {
		params, err := schema(t)
		if err != nil {
			return nil, err
		}
		p.Tools = append(p.Tools, chatTool{Type: "function", Function: functionDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return p, nil
}

func messages(req *model.Request) ([]chatMessage, error) {
	var out []chatMessage
	if req.System != "" {
		out = append(out, chatMessage{Role: "system", Content: &req.System})
	}
	for i, msg := range req.Messages {
		var text strings.Builder
		var calls []chatToolCall
		for _, part := range msg.Parts {
			switch part.Kind {
			case model.PartText:
				text.WriteString(part.Text)
			case model.PartToolCall:
				args := strings.TrimSpace(string(part.Args))
				if args == "" {
					args = "{}"
				}
				calls = append(calls, chatToolCall{ID: part.ToolCallID, Type: "function", Function: functionCall{Name: part.ToolName, Arguments: args}})
			case model.PartToolResult:
				out = append(out, chatMessage{Role: "tool", Content: ptr(part.Text), ToolCallID: part.ToolCallID})
			case model.PartThinking:
				// Reasoning is not sent back.
			default:
				return nil, fmt.Errorf("openai: message %d: unknown part kind %q", i, part.Kind)
			}
		}
		switch msg.Role {
		case model.RoleUser, model.RoleTool:
			if len(calls) > 0 {
				return nil, fmt.Errorf("openai: message %d: a %s message cannot carry tool calls", i, msg.Role)
			}
			if text.Len() > 0 {
				out = append(out, chatMessage{Role: "user", Content: ptr(text.String())})
			}
		case model.RoleAssistant:
			if text.Len() == 0 && len(calls) == 0 {
				continue // e.g. only thinking
			}
			am := chatMessage{Role: "assistant", ToolCalls: calls}
			if text.Len() > 0 {
				am.Content = ptr(text.String())
			}
			out = append(out, am)
		default:
			return nil, fmt.Errorf("openai: message %d: unknown role %q", i, msg.Role)
		}
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

// schema checks a tool's JSON schema; an empty one is an object without
// properties.
func schema(t model.ToolSpec) (json.RawMessage, error) {
	raw := strings.TrimSpace(string(t.Parameters))
	if raw == "" || raw == "null" {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &p); err != nil || p == nil {
		return nil, fmt.Errorf("openai: tool %s: parameters are not a JSON schema object", t.Name)
	}
	return json.RawMessage(raw), nil
}

// checkJSON checks that raw is JSON (any value).
func checkJSON(raw json.RawMessage) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return raw, nil
}

// settings copies the optional sampling settings into p.
func (m *Model) settings(p *chatRequest) {
	c := &m.cfg
	p.TopP, p.PresencePenalty, p.FrequencyPenalty, p.Seed = c.TopP, c.PresencePenalty, c.FrequencyPenalty, c.Seed
	p.Stop, p.ParallelToolCalls, p.ReasoningEffort = c.Stop, c.ParallelToolCalls, c.ReasoningEffort
}
