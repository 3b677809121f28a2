package acp

import "encoding/json"

// ProtocolVersion is the ACP version this server speaks.
const ProtocolVersion = 1

// ContentBlock is an ACP content block. Only the fields of the variants the
// server reads or writes are declared.
type ContentBlock struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	URI      string            `json:"uri,omitempty"`  // resource_link
	Name     string            `json:"name,omitempty"` // resource_link
	MimeType string            `json:"mimeType,omitempty"`
	Resource *EmbeddedResource `json:"resource,omitempty"` // resource
}

// EmbeddedResource is the resource of a "resource" content block.
type EmbeddedResource struct {
	URI      string  `json:"uri"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
	MimeType string  `json:"mimeType,omitempty"`
}

func textBlock(s string) ContentBlock { return ContentBlock{Type: "text", Text: s} }

// ToolCallContent is one entry of a tool call's content ("content" variant).
type ToolCallContent struct {
	Type    string       `json:"type"`
	Content ContentBlock `json:"content"`
}

func textContent(s string) ToolCallContent {
	return ToolCallContent{Type: "content", Content: textBlock(s)}
}

// Session update kinds (update.sessionUpdate).
const (
	UpdateUserMessageChunk  = "user_message_chunk"
	UpdateAgentMessageChunk = "agent_message_chunk"
	UpdateAgentThoughtChunk = "agent_thought_chunk"
	UpdateToolCall          = "tool_call"
	UpdateToolCallUpdate    = "tool_call_update"
	UpdatePlan              = "plan"
	UpdateCurrentMode       = "current_mode_update"
	UpdateSessionInfo       = "session_info_update"
	UpdateSubagent          = "subagent_update"
)

// ChunkUpdate is a user_message_chunk, agent_message_chunk or
// agent_thought_chunk.
type ChunkUpdate struct {
	SessionUpdate string       `json:"sessionUpdate"`
	Content       ContentBlock `json:"content"`
}

// ToolCallUpdate is a tool_call or a tool_call_update (title is required
// for tool_call and always set there).
type ToolCallUpdate struct {
	SessionUpdate string            `json:"sessionUpdate,omitempty"`
	ToolCallID    string            `json:"toolCallId"`
	Title         string            `json:"title,omitempty"`
	Kind          string            `json:"kind,omitempty"`
	Status        string            `json:"status,omitempty"`
	Content       []ToolCallContent `json:"content,omitempty"`
	RawInput      json.RawMessage   `json:"rawInput,omitempty"`
	RawOutput     any               `json:"rawOutput,omitempty"`
	Meta          map[string]any    `json:"_meta,omitempty"`
}

// PlanEntry is one entry of a plan update.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// PlanUpdate is a plan update (it replaces the whole plan).
type PlanUpdate struct {
	SessionUpdate string      `json:"sessionUpdate"`
	Entries       []PlanEntry `json:"entries"`
}

// SessionInfoUpdate carries a session's title.
type SessionInfoUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	Title         string `json:"title,omitempty"`
	UpdatedAt     string `json:"updatedAt,omitempty"`
}

// SubagentState is the state of a subagent_update.
type SubagentState struct {
	State      string `json:"state"` // running | idle
	StopReason string `json:"stopReason,omitempty"`
	Error      *Error `json:"error,omitempty"` // with stopReason "error"
}

// SubagentUpdate is the unstable subagent_update, sent on the parent
// session for a client that advertised clientCapabilities.subagents.
type SubagentUpdate struct {
	SessionUpdate string         `json:"sessionUpdate"`
	SessionID     string         `json:"sessionId"`
	Title         string         `json:"title,omitempty"`
	Description   string         `json:"description,omitempty"`
	State         *SubagentState `json:"state,omitempty"`
	Meta          map[string]any `json:"_meta,omitempty"`
}

// SessionNotification is the params of session/update.
type SessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

// Stop reasons of session/prompt.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopRefusal         = "refusal"
	StopCancelled       = "cancelled"
)

// Tool call statuses.
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
)

var toolKinds = map[string]bool{
	"read": true, "edit": true, "delete": true, "move": true, "search": true, "execute": true,
	"think": true, "fetch": true, "switch_mode": true, "other": true,
}

func toolKind(k string) string {
	if toolKinds[k] {
		return k
	}
	return "other"
}

func toolStatus(s string) string {
	switch s {
	case StatusPending, StatusInProgress, StatusCompleted, StatusFailed:
		return s
	}
	return ""
}

// Method names.
const (
	methodInitialize        = "initialize"
	methodAuthenticate      = "authenticate"
	methodSessionNew        = "session/new"
	methodSessionLoad       = "session/load"
	methodSessionList       = "session/list"
	methodSessionSetMode    = "session/set_mode"
	methodSessionPrompt     = "session/prompt"
	methodSessionCancel     = "session/cancel"
	methodCancelRequest     = "$/cancel_request"
	methodSessionUpdate     = "session/update"
	methodRequestPermission = "session/request_permission"
)
