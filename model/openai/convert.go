package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

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
func (m *Model) params(req *model.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{
		Model:         m.cfg.Model,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	if m.cfg.Temperature != nil {
		p.Temperature = sdk.Float(*m.cfg.Temperature)
	}
	if m.cfg.MaxTokens > 0 {
		if m.ep.Official {
			p.MaxCompletionTokens = sdk.Int(int64(m.cfg.MaxTokens))
		} else {
			p.MaxTokens = sdk.Int(int64(m.cfg.MaxTokens))
		}
	}
	m.settings(&p)
	if o := req.Output; o != nil {
		var schema any
		if err := json.Unmarshal(o.Schema, &schema); err != nil {
			return p, fmt.Errorf("output schema: %w", err)
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: o.Name, Schema: schema}
		if o.Description != "" {
			js.Description = sdk.String(o.Description)
		}
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}}
	}
	msgs, err := messages(req)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range req.Tools {
		params, err := schema(t)
		if err != nil {
			return p, err
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			def.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(def))
	}
	return p, nil
}

func messages(req *model.Request) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	if req.System != "" {
		out = append(out, sdk.SystemMessage(req.System))
	}
	for i, msg := range req.Messages {
		var text strings.Builder
		var calls []sdk.ChatCompletionMessageToolCallUnionParam
		for _, part := range msg.Parts {
			switch part.Kind {
			case model.PartText:
				text.WriteString(part.Text)
			case model.PartToolCall:
				args := strings.TrimSpace(string(part.Args))
				if args == "" {
					args = "{}"
				}
				calls = append(calls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       part.ToolCallID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: part.ToolName, Arguments: args},
					},
				})
			case model.PartToolResult:
				out = append(out, sdk.ToolMessage(part.Text, part.ToolCallID))
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
				out = append(out, sdk.UserMessage(text.String()))
			}
		case model.RoleAssistant:
			if text.Len() == 0 && len(calls) == 0 {
				continue // e.g. only thinking
			}
			am := sdk.ChatCompletionAssistantMessageParam{ToolCalls: calls}
			if text.Len() > 0 {
				am.Content.OfString = sdk.String(text.String())
			}
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &am})
		default:
			return nil, fmt.Errorf("openai: message %d: unknown role %q", i, msg.Role)
		}
	}
	return out, nil
}

// schema decodes a tool's JSON schema; an empty one is an object without
// properties.
func schema(t model.ToolSpec) (shared.FunctionParameters, error) {
	raw := strings.TrimSpace(string(t.Parameters))
	if raw == "" || raw == "null" {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(raw), &p); err != nil || p == nil {
		return nil, fmt.Errorf("openai: tool %s: parameters are not a JSON schema object", t.Name)
	}
	return p, nil
}

// settings copies the optional sampling settings into p.
func (m *Model) settings(p *sdk.ChatCompletionNewParams) {
	c := &m.cfg
	if c.TopP != nil {
		p.TopP = sdk.Float(*c.TopP)
	}
	if c.PresencePenalty != nil {
		p.PresencePenalty = sdk.Float(*c.PresencePenalty)
	}
	if c.FrequencyPenalty != nil {
		p.FrequencyPenalty = sdk.Float(*c.FrequencyPenalty)
	}
	if c.Seed != nil {
		p.Seed = sdk.Int(*c.Seed)
	}
	if len(c.Stop) > 0 {
		p.Stop = sdk.ChatCompletionNewParamsStopUnion{OfStringArray: c.Stop}
	}
	if c.ParallelToolCalls != nil {
		p.ParallelToolCalls = sdk.Bool(*c.ParallelToolCalls)
	}
	if c.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(c.ReasoningEffort)
	}
}
