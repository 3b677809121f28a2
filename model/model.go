package model

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/agentpool/agentpool/event"
)

// Role of a message.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries tool results back to the model.
	RoleTool Role = "tool"
)

// PartKind says what a message part holds.
type PartKind string

// Part kinds.
const (
	PartText       PartKind = "text"
	PartThinking   PartKind = "thinking"
	PartToolCall   PartKind = "tool_call"
	PartToolResult PartKind = "tool_result"
)

// Part is one piece of a message.
type Part struct {
	Kind       PartKind        `json:"kind"`
	Text       string          `json:"text,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolName   string          `json:"tool_name,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	// DuplicateOf is set on a tool call whose id the model had already
	// given an earlier call of the same response: the call has a fresh
	// ToolCallID (providers reject a repeated id), is not run, and its
	// result is an error that names the repeated id.
	DuplicateOf string `json:"duplicate_of,omitempty"`
}

// Message is one message of a conversation.
type Message struct {
	Role  Role   `json:"role"`
	Parts []Part `json:"parts"`
	// Synthetic marks a message the runtime added (an injected async result
	// or hook context) rather than one a user typed.
	Synthetic bool `json:"synthetic,omitempty"`
}

// Text joins the text parts of m.
func (m Message) Text() string {
	var n, count int
	last := ""
	for _, p := range m.Parts {
		if p.Kind == PartText {
			n += len(p.Text)
			count++
			last = p.Text
		}
	}
	if count <= 1 {
		return last // nothing to join
	}
	buf := make([]byte, 0, n)
	for _, p := range m.Parts {
		if p.Kind == PartText {
			buf = append(buf, p.Text...)
		}
	}
	return string(buf)
}

// ToolCalls returns the tool-call parts of m. When every part is a tool
// call the result shares m.Parts (capacity clipped, so appending to it
// cannot write into m); treat it as read-only.
func (m Message) ToolCalls() []Part {
	n := 0
	for _, p := range m.Parts {
		if p.Kind == PartToolCall {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case len(m.Parts):
		return m.Parts[:n:n]
	}
	out := make([]Part, 0, n)
	for _, p := range m.Parts {
		if p.Kind == PartToolCall {
			out = append(out, p)
		}
	}
	return out
}

// UserText builds a user message with one text part.
func UserText(s string) Message {
	return Message{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: s}}}
}

// ToolSpec describes a tool offered to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // a JSON schema object
}

// Request is one model call.
type Request struct {
	System   string
	Messages []Message
	Tools    []ToolSpec
	// Output, when set, asks for a structured final answer: a JSON value
	// that satisfies its schema, in the provider's structured-output mode
	// where it has one.
	Output *OutputSchema
	// Summarize is set on the request that compacts a conversation (see
	// docs/control.md, Compaction): the messages its summary replaces.
	// Messages hold them as one text a provider takes without tools;
	// providers send the request as any other, and a model may answer it
	// in its own way (the test model writes a fixed summary).
	Summarize []Message
}

// OutputSchema describes the structured answer a Request asks for.
type OutputSchema struct {
	Name        string          // a name for the schema (letters, digits, "_", "-")
	Description string          // what the answer is
	Schema      json.RawMessage // a JSON schema
}

// ChunkKind says what a Chunk carries.
type ChunkKind uint8

// Chunk kinds.
const (
	ChunkText ChunkKind = iota + 1
	ChunkThinking
	// ChunkToolCall is a tool-call delta: Index identifies the call within
	// the response; the first delta of a call carries ToolCallID and
	// ToolName, later ones append ArgsDelta.
	ChunkToolCall
	ChunkUsage
	ChunkFinish
)

// Finish reasons, normalized across providers.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
	FinishRefusal   = "refusal"
)

// Chunk is one streamed piece of a model response.
type Chunk struct {
	Kind         ChunkKind
	Text         string // text or thinking delta
	Index        int    // tool call index
	ToolCallID   string
	ToolName     string
	ArgsDelta    string
	Usage        event.Usage
	FinishReason string
}

// Model is a language model.
type Model interface {
	// ID names the model (for example "gpt-4o-mini" or "test").
	ID() string
	// Stream sends req and yields the response chunk by chunk. A non-nil
	// error ends the stream. req is read-only: its messages are the
	// caller's conversation.
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// Pricing is implemented by models that know their price, in US dollars
// per million tokens.
type Pricing interface {
	Price() (inputPerMillion, outputPerMillion float64)
}

// Cost returns the cost of usage u on m, or 0 when m has no price.
func Cost(m Model, u event.Usage) float64 {
	p, ok := m.(Pricing)
	if !ok {
		return 0
	}
	in, out := p.Price()
	return (float64(u.InputTokens)*in + float64(u.OutputTokens)*out) / 1e6
}

// Clone returns a deep copy of p.
func (p Part) Clone() Part {
	if p.Args != nil {
		p.Args = append(json.RawMessage(nil), p.Args...)
	}
	return p
}

// Clone returns a deep copy of m: changing the copy's parts changes
// nothing in m.
func (m Message) Clone() Message {
	m.Parts = CloneParts(m.Parts)
	return m
}

// CloneParts returns a deep copy of parts (nil for nil).
func CloneParts(parts []Part) []Part {
	if parts == nil {
		return nil
	}
	out := make([]Part, len(parts))
	for i, p := range parts {
		out[i] = p.Clone()
	}
	return out
}

// CloneMessages returns a deep copy of msgs (nil for nil).
func CloneMessages(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Clone()
	}
	return out
}
