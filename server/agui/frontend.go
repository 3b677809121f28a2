// What a client lends a run (RunAgentInput.context and tools) and the
// results of its tools it brings back (tool messages): docs/agui.md,
// "Front-end tools and context".

package agui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/session"
)

// Bounds of what a client lends a run: every entry reaches each model
// request of the run, so they are kept well under a model's context.
const (
	MaxContextEntries      = 64
	MaxContextBytes        = 64 << 10  // description and value of one entry
	MaxContextTotalBytes   = 256 << 10 // of all entries
	MaxClientTools         = 64
	MaxToolNameBytes       = 64
	MaxToolDescBytes       = 4 << 10
	MaxToolParametersBytes = 64 << 10
	MaxToolResultBytes     = 1 << 20
)

// toolName reports whether name is one providers take: letters,
// digits, _ and -, 1 to MaxToolNameBytes of them.
func toolName(name string) bool {
	if name == "" || len(name) > MaxToolNameBytes {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// noClientResult is the result of an open client call that the client's
// next run brought none for.
const noClientResult = "no result: the client's next run carried no tool message for this call"

// lent is what a run request lends the run besides its prompt.
type lent struct {
	instructions string
	tools        []model.ToolSpec
}

// parseLent decodes and bounds the context and tools of in for node name.
func (s *Server) parseLent(in *wire.RunAgentInput, name string) (lent, error) {
	var l lent
	var ctxs []wire.Context
	if err := decodeList(in.Context, "context", &ctxs); err != nil {
		return l, err
	}
	var tools []wire.Tool
	if err := decodeList(in.Tools, "tools", &tools); err != nil {
		return l, err
	}
	if len(ctxs) == 0 && len(tools) == 0 {
		return l, nil
	}
	n, _ := s.pool.Node(name)
	a, ok := n.(*agent.Agent)
	if !ok {
		return l, badInput("context and tools go to an agent's model: %q is a %s, not a plain agent; send them to an agent (POST /agents/{name})", name, n.SourceType())
	}
	var err error
	if l.instructions, err = contextBlock(ctxs); err != nil {
		return l, err
	}
	if l.tools, err = clientTools(tools, a); err != nil {
		return l, err
	}
	return l, nil
}

// decodeList decodes the JSON array raw (absent or null: none) into v.
func decodeList(raw json.RawMessage, field string, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '[' {
		return badInput("field %q: expected an array", field)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return badInput("field %q: %v", field, err)
	}
	return nil
}

// contextBlock is the instructions the context entries become: one block
// per entry, in order, after the agent's system prompt.
func contextBlock(ctxs []wire.Context) (string, error) {
	if len(ctxs) == 0 {
		return "", nil
	}
	if len(ctxs) > MaxContextEntries {
		return "", badInput("context has %d entries, more than the %d allowed", len(ctxs), MaxContextEntries)
	}
	var b strings.Builder
	b.WriteString("The application gives this context for the current request (AG-UI context, one entry per block):")
	total := 0
	for i, c := range ctxs {
		size := len(c.Description) + len(c.Value)
		switch {
		case size > MaxContextBytes:
			return "", badInput("context[%d] has %d bytes, more than the %d allowed for one entry", i, size, MaxContextBytes)
		case strings.TrimSpace(c.Value) == "":
			return "", badInput("context[%d].value is empty", i)
		}
		if total += size; total > MaxContextTotalBytes {
			return "", badInput("context has more than the %d bytes allowed in all (at entry %d)", MaxContextTotalBytes, i)
		}
		desc, _ := json.Marshal(c.Description)
		fmt.Fprintf(&b, "\n\n<context description=%s>\n%s\n</context>", desc, c.Value)
	}
	return b.String(), nil
}

// clientTools checks the client's tools: bounded, named as providers
// take them, and none named as one of the agent's own.
func clientTools(tools []wire.Tool, a *agent.Agent) ([]model.ToolSpec, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	if len(tools) > MaxClientTools {
		return nil, badInput("tools has %d entries, more than the %d allowed", len(tools), MaxClientTools)
	}
	own := map[string]bool{}
	for _, n := range a.ToolNames() {
		own[n] = true
	}
	seen := map[string]bool{}
	out := make([]model.ToolSpec, 0, len(tools))
	for i, t := range tools {
		params := bytes.TrimSpace(t.Parameters)
		switch {
		case !toolName(t.Name):
			return nil, badInput("tools[%d].name %q: expected 1 to %d letters, digits, _ or -", i, t.Name, MaxToolNameBytes)
		case own[t.Name]:
			return nil, badInput("tools[%d].name %q: agent %s has a tool of that name; rename the front-end tool", i, t.Name, a.Name())
		case seen[t.Name]:
			return nil, badInput("tools[%d].name %q: given twice", i, t.Name)
		case len(t.Description) > MaxToolDescBytes:
			return nil, badInput("tools[%d].description has %d bytes, more than the %d allowed", i, len(t.Description), MaxToolDescBytes)
		case len(params) > MaxToolParametersBytes:
			return nil, badInput("tools[%d].parameters has %d bytes, more than the %d allowed", i, len(params), MaxToolParametersBytes)
		case len(params) > 0 && string(params) != "null" && params[0] != '{':
			return nil, badInput("tools[%d].parameters: expected a JSON schema object", i)
		}
		seen[t.Name] = true
		spec := model.ToolSpec{Name: t.Name, Description: t.Description}
		if len(params) > 0 && string(params) != "null" {
			spec.Parameters = json.RawMessage(params)
		}
		out = append(out, spec)
	}
	return out, nil
}

// clientResults returns the results in in's tool messages for the open
// calls of session sid (session.OpenCalls), one per open call (one the
// input does not answer gets the error noClientResult: the client sent
// a new message instead), and the index of the last input message that
// answered one (-1: none). Nil when the session has no open call, and
// when the input has no tool message (its conversation is not read then;
// the pool's history gives an open call session.InterruptedResult).
func (s *Server) clientResults(ctx context.Context, in *wire.RunAgentInput, sid string) ([]model.Part, int, error) {
	if !hasRole(in, "tool") {
		return nil, -1, nil
	}
	stored, err := s.pool.Store().Messages(ctx, sid)
	if err != nil {
		return nil, -1, fmt.Errorf("read the thread's conversation: %w", err)
	}
	open := session.OpenCalls(stored)
	if len(open) == 0 {
		return nil, -1, nil
	}
	results := make([]model.Part, len(open))
	last := -1
	for k, c := range open {
		results[k] = model.Part{Kind: model.PartToolResult, ToolCallID: c.ToolCallID, ToolName: c.ToolName, Text: noClientResult, IsError: true}
		for i := len(in.Messages) - 1; i >= 0; i-- {
			m := in.Messages[i]
			if m.Role != "tool" || m.ToolCallID != c.ToolCallID {
				continue
			}
			text, err := contentText(m.Content)
			if err != nil {
				return nil, -1, badInput("messages[%d].content: %v", i, err)
			}
			if m.Error != "" {
				text = strings.TrimSpace(m.Error + "\n" + text)
			}
			if len(text) > MaxToolResultBytes {
				return nil, -1, badInput("messages[%d]: the result of tool call %s has %d bytes, more than the %d allowed", i, c.ToolCallID, len(text), MaxToolResultBytes)
			}
			results[k].Text, results[k].IsError = text, m.Error != ""
			last = max(last, i)
			break
		}
	}
	return results, last, nil
}

// promptAfter is the text of the last user message after index after
// ("" when none comes after it): the prompt of a run that brings client
// results.
func promptAfter(in *wire.RunAgentInput, after int) (string, error) {
	for i := len(in.Messages) - 1; i > after; i-- {
		if in.Messages[i].Role != "user" {
			continue
		}
		text, err := contentText(in.Messages[i].Content)
		if err != nil {
			return "", badInput("messages[%d].content: %v", i, err)
		}
		return text, nil
	}
	return "", nil
}

// callIDs is the set of the tool call ids of parts (nil when none).
func callIDs(parts []model.Part) map[string]bool {
	if len(parts) == 0 {
		return nil
	}
	ids := make(map[string]bool, len(parts))
	for _, p := range parts {
		ids[p.ToolCallID] = true
	}
	return ids
}
