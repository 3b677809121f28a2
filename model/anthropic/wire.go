package anthropic

import "encoding/json"

// The JSON of the Messages API that this package uses, as documented in
// Anthropic's API reference (POST /v1/messages with "stream": true, and
// the events of its stream). Fields the package does not send or read are
// left out.

// apiVersion is sent as the anthropic-version header: the API version
// whose request and events this package speaks.
const apiVersion = "2026-10-21"

// messagesRequest is the request body.
type messagesRequest struct {
	Model         string        `json:"model"`
	MaxTokens     int           `json:"max_tokens"`
	System        []textBlock   `json:"system,omitempty"`
	Messages      []message     `json:"messages"`
	Tools         []tool        `json:"tools,omitempty"`
	StopSequences []string      `json:"stop_sequences,omitempty"`
	OutputConfig  *outputConfig `json:"output_config,omitempty"`
	Stream        bool          `json:"stream"`
}

// message is a user or assistant message: a list of content blocks
// (textBlock, toolUseBlock, toolResultBlock).
type message struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

// textBlock: Type is "text".
type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolUseBlock is a tool call of the assistant: Type is "tool_use", Input
// the call's arguments, a JSON object.
type toolUseBlock struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	Input any    `json:"input"`
}

// toolResultBlock is the result of a tool call: Type is "tool_result".
type toolResultBlock struct {
	Type      string      `json:"type"`
	ToolUseID string      `json:"tool_use_id"`
	Content   []textBlock `json:"content,omitempty"`
	IsError   bool        `json:"is_error,omitempty"`
}

// tool is a custom tool; InputSchema is a JSON schema of type object.
type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"input_schema"`
}

// outputConfig asks for structured output: Format.Type is
// "json_schema".
type outputConfig struct {
	Format outputFormat `json:"format"`
}

type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// streamEvent is the data of one event of the stream; Type says which
// fields are set: message_start (Message), content_block_start (Index,
// ContentBlock), content_block_delta (Index, Delta), content_block_stop
// (Index), message_delta (Delta.StopReason, Usage), message_stop.
type streamEvent struct {
	Type         string       `json:"type"`
	Index        int64        `json:"index"`
	Message      eventMessage `json:"message"`
	ContentBlock contentBlock `json:"content_block"`
	Delta        eventDelta   `json:"delta"`
	Usage        usage        `json:"usage"`
}

type eventMessage struct {
	Usage usage `json:"usage"`
}

// contentBlock is the block a content_block_start opens (text, thinking,
// tool_use, ...), with its content so far.
type contentBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
}

// eventDelta is the delta of a content_block_delta (Type text_delta,
// thinking_delta, input_json_delta, ...) or of a message_delta
// (StopReason).
type eventDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Thinking    string `json:"thinking"`
	PartialJSON string `json:"partial_json"`
	StopReason  string `json:"stop_reason"`
}

// usage counts tokens; the counts of message_delta are cumulative.
type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}
