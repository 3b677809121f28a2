package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

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
func (m *Model) params(req *model.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{Model: sdk.Model(m.cfg.Model), MaxTokens: DefaultMaxTokens}
	if m.cfg.MaxTokens > 0 {
		p.MaxTokens = int64(m.cfg.MaxTokens)
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	if len(m.cfg.Stop) > 0 {
		p.StopSequences = m.cfg.Stop
	}
	if o := req.Output; o != nil {
		// Structured outputs: the answer follows the JSON schema.
		var schema map[string]any
		if err := json.Unmarshal(o.Schema, &schema); err != nil {
			return p, fmt.Errorf("anthropic: output schema: %w", err)
		}
		p.OutputConfig = sdk.OutputConfigParam{Format: sdk.JSONOutputFormatParam{Schema: schema}}
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range req.Tools {
		schema, err := inputSchema(t)
		if err != nil {
			return p, err
		}
		tp := sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: &tp})
	}
	return p, nil
}

func messages(in []model.Message) ([]sdk.MessageParam, error) {
	var (
		out      []sdk.MessageParam
		lastRole model.Role
	)
	for i, msg := range in {
		role := msg.Role
		var blocks []sdk.ContentBlockParamUnion
		for _, part := range msg.Parts {
			switch part.Kind {
			case model.PartText:
				if part.Text != "" {
					blocks = append(blocks, sdk.NewTextBlock(part.Text))
				}
			case model.PartThinking:
				// Not sent back: the API needs the signature of a
				// thinking block, which model.Part does not keep.
			case model.PartToolCall:
				if role != model.RoleAssistant {
					return nil, fmt.Errorf("anthropic: message %d: a %s message cannot carry tool calls", i, role)
				}
				blocks = append(blocks, sdk.NewToolUseBlock(part.ToolCallID, toolInput(part.Args), part.ToolName))
			case model.PartToolResult:
				if role == model.RoleAssistant {
					return nil, fmt.Errorf("anthropic: message %d: an assistant message cannot carry tool results", i)
				}
				tr := sdk.ToolResultBlockParam{ToolUseID: part.ToolCallID}
				if part.Text != "" {
					tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: part.Text}}}
				}
				if part.IsError {
					tr.IsError = sdk.Bool(true)
				}
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &tr})
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
			if role == model.RoleUser {
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
			} else {
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
			}
			continue
		}
		if role == model.RoleUser {
			out = append(out, sdk.NewUserMessage(blocks...))
		} else {
			out = append(out, sdk.NewAssistantMessage(blocks...))
		}
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
// without properties.
func inputSchema(t model.ToolSpec) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	raw := strings.TrimSpace(string(t.Parameters))
	if raw == "" || raw == "null" {
		s.Properties = map[string]any{}
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return s, fmt.Errorf("anthropic: tool %s: parameters are not a JSON schema object", t.Name)
	}
	for k, v := range m {
		switch k {
		case "type":
			// Always "object".
		case "properties":
			s.Properties = v
		case "required":
			list, _ := v.([]any)
			for _, r := range list {
				if name, ok := r.(string); ok {
					s.Required = append(s.Required, name)
				}
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	return s, nil
}
