package tracing

import (
	"encoding/json"
	"reflect"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentpool/agentpool/model"
)

// maxCaptured bounds one captured attribute (a conversation, a tool
// result): backends drop or truncate large attributes anyway.
const maxCaptured = 64 << 10

// The captured messages, in the shape of the GenAI conventions' input and
// output messages: a role and parts typed text, tool_call or
// tool_call_response. Only what the conversation holds is captured, never
// a provider's configuration (API keys, headers).
type capturedMessage struct {
	Role         string         `json:"role"`
	Parts        []capturedPart `json:"parts"`
	FinishReason string         `json:"finish_reason,omitempty"`
}

type capturedPart struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

func captureRequest(span trace.Span, req *model.Request) {
	if req.System != "" {
		span.SetAttributes(keySystem.String(clip(req.System)))
	}
	msgs := make([]capturedMessage, 0, len(req.Messages))
	for _, m := range req.Messages {
		cm := capturedMessage{Role: string(m.Role)}
		for _, p := range m.Parts {
			switch p.Kind {
			case model.PartText:
				cm.Parts = append(cm.Parts, capturedPart{Type: "text", Content: p.Text})
			case model.PartToolCall:
				cm.Parts = append(cm.Parts, capturedPart{Type: "tool_call", ID: p.ToolCallID, Name: p.ToolName, Arguments: validJSON(p.Args)})
			case model.PartToolResult:
				cm.Parts = append(cm.Parts, capturedPart{Type: "tool_call_response", ID: p.ToolCallID, Response: p.Text})
			}
		}
		msgs = append(msgs, cm)
	}
	if b, err := json.Marshal(msgs); err == nil {
		span.SetAttributes(keyInputMessages.String(clip(string(b))))
	}
}

// outputCapture collects a response's text and tool calls from its chunks.
type outputCapture struct {
	text  strings.Builder
	calls []capturedPart
	args  []strings.Builder
}

func (o *outputCapture) add(c model.Chunk) {
	switch c.Kind {
	case model.ChunkText:
		if o.text.Len() < maxCaptured {
			o.text.WriteString(c.Text)
		}
	case model.ChunkToolCall:
		for len(o.calls) <= c.Index && c.Index < 1024 {
			o.calls = append(o.calls, capturedPart{Type: "tool_call"})
			o.args = append(o.args, strings.Builder{})
		}
		if c.Index >= len(o.calls) || c.Index < 0 {
			return
		}
		if c.ToolCallID != "" {
			o.calls[c.Index].ID = c.ToolCallID
		}
		if c.ToolName != "" {
			o.calls[c.Index].Name = c.ToolName
		}
		o.args[c.Index].WriteString(c.ArgsDelta)
	}
}

func (o *outputCapture) set(span trace.Span, finish string) {
	m := capturedMessage{Role: string(model.RoleAssistant), FinishReason: finish}
	if o.text.Len() > 0 {
		m.Parts = append(m.Parts, capturedPart{Type: "text", Content: o.text.String()})
	}
	for i, c := range o.calls {
		c.Arguments = validJSON([]byte(o.args[i].String()))
		m.Parts = append(m.Parts, c)
	}
	if b, err := json.Marshal([]capturedMessage{m}); err == nil {
		span.SetAttributes(keyOutputMessages.String(clip(string(b))))
	}
}

// validJSON returns raw when it is JSON, else raw as a JSON string.
func validJSON(raw []byte) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	if json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

func clip(s string) string {
	if len(s) <= maxCaptured {
		return s
	}
	n := maxCaptured
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// typeName is an error's Go type, as error.type wants when there is no
// better name ("*url.Error").
func typeName(err error) string {
	return reflect.TypeOf(err).String()
}

// pkgOf is the import path of v's (pointed-to) type.
func pkgOf(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath()
}

func hasSuffix(s, suffix string) bool { return strings.HasSuffix(s, suffix) }
