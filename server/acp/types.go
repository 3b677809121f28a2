package acp

import (
	"bytes"
	"encoding/json"
)

// ProtocolVersion is the ACP version this server speaks.
const ProtocolVersion = 1

// contentBlock is an ACP content block. Only the fields of the variants the
// server reads or writes are declared.
type contentBlock struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	URI      string            `json:"uri,omitempty"`  // resource_link
	Name     string            `json:"name,omitempty"` // resource_link
	MimeType string            `json:"mimeType,omitempty"`
	Resource *embeddedResource `json:"resource,omitempty"` // resource
}

// embeddedResource is the resource of a "resource" content block.
type embeddedResource struct {
	URI      string  `json:"uri"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
	MimeType string  `json:"mimeType,omitempty"`
}

func textBlock(s string) contentBlock { return contentBlock{Type: "text", Text: s} }

// Tool call content types (toolCallContent.Type).
const (
	contentTypeContent  = "content"
	contentTypeDiff     = "diff"
	contentTypeTerminal = "terminal"
)

// toolCallContent is one entry of a tool call's content: a content block
// ("content": Content), a file diff ("diff": Path, OldText, NewText) or a
// client terminal ("terminal": TerminalID). Only the fields of its type
// are encoded (no MarshalJSON: a progress update is encoded without
// allocating).
type toolCallContent struct {
	Type       string       `json:"type"`
	Content    contentBlock `json:"content,omitzero"`
	Path       string       `json:"path,omitempty"`
	OldText    diffOldText  `json:"oldText,omitzero"`
	NewText    *string      `json:"newText,omitempty"`
	TerminalID string       `json:"terminalId,omitempty"`
}

// diffOldText is a diff's original text: encoded as null for a file the
// call created, and not at all outside a diff (its zero value; no IsZero
// method, whose call through reflection would allocate).
type diffOldText struct {
	Set  bool    // a diff: the field is encoded
	Text *string // nil: a new file (null)
}

// MarshalJSON encodes the text, or null for a new file.
func (o diffOldText) MarshalJSON() ([]byte, error) {
	if o.Text == nil {
		return []byte("null"), nil
	}
	return json.Marshal(*o.Text)
}

// UnmarshalJSON decodes a string or null.
func (o *diffOldText) UnmarshalJSON(b []byte) error {
	o.Set = true
	o.Text = nil
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	o.Text = &s
	return nil
}

func textContent(s string) toolCallContent {
	return toolCallContent{Type: contentTypeContent, Content: textBlock(s)}
}

// diffContent shows a change to a file; old is nil for a new file.
func diffContent(path string, old *string, newText string) toolCallContent {
	return toolCallContent{Type: contentTypeDiff, Path: path, OldText: diffOldText{Set: true, Text: old}, NewText: &newText}
}

// terminalContent embeds a client terminal (created with terminal/create).
func terminalContent(id string) toolCallContent {
	return toolCallContent{Type: contentTypeTerminal, TerminalID: id}
}

// toolCallLocation is a file a tool call reads or changes; Line is 1-based
// and left out when the call concerns the whole file.
type toolCallLocation struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// Session update kinds (update.sessionUpdate).
const (
	updateUserMessageChunk  = "user_message_chunk"
	updateAgentMessageChunk = "agent_message_chunk"
	updateAgentThoughtChunk = "agent_thought_chunk"
	updateToolCall          = "tool_call"
	updateToolCallUpdate    = "tool_call_update"
	updatePlan              = "plan"
	updateCurrentMode       = "current_mode_update"
	updateSessionInfo       = "session_info_update"
	updateSubagent          = "subagent_update"
)

// chunkUpdate is a user_message_chunk, agent_message_chunk or
// agent_thought_chunk.
type chunkUpdate struct {
	SessionUpdate string       `json:"sessionUpdate"`
	Content       contentBlock `json:"content"`
}

// toolCallUpdate is a tool_call or a tool_call_update (title is required
// for tool_call and always set there).
type toolCallUpdate struct {
	SessionUpdate string             `json:"sessionUpdate,omitempty"`
	ToolCallID    string             `json:"toolCallId"`
	Title         string             `json:"title,omitempty"`
	Kind          string             `json:"kind,omitempty"`
	Status        string             `json:"status,omitempty"`
	Content       []toolCallContent  `json:"content,omitempty"`
	Locations     []toolCallLocation `json:"locations,omitempty"`
	RawInput      json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput     any                `json:"rawOutput,omitempty"`
	Meta          map[string]any     `json:"_meta,omitempty"`
}

// planEntry is one entry of a plan update.
type planEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// planUpdate is a plan update (it replaces the whole plan).
type planUpdate struct {
	SessionUpdate string      `json:"sessionUpdate"`
	Entries       []planEntry `json:"entries"`
}

// sessionInfoUpdate carries a session's title.
type sessionInfoUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	Title         string `json:"title,omitempty"`
	UpdatedAt     string `json:"updatedAt,omitempty"`
}

// subagentState is the state of a subagent_update.
type subagentState struct {
	State      string    `json:"state"` // running | idle
	StopReason string    `json:"stopReason,omitempty"`
	Error      *rpcError `json:"error,omitempty"` // with stopReason "error"
}

// subagentUpdate is the unstable subagent_update, sent on the parent
// session for a client that advertised clientCapabilities.subagents.
type subagentUpdate struct {
	SessionUpdate string         `json:"sessionUpdate"`
	SessionID     string         `json:"sessionId"`
	Title         string         `json:"title,omitempty"`
	Description   string         `json:"description,omitempty"`
	State         *subagentState `json:"state,omitempty"`
	Meta          map[string]any `json:"_meta,omitempty"`
}

// sessionNotification is the params of session/update.
type sessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

// Stop reasons of session/prompt.
const (
	stopEndTurn         = "end_turn"
	stopMaxTokens       = "max_tokens"
	stopMaxTurnRequests = "max_turn_requests"
	stopRefusal         = "refusal"
	stopCancelled       = "cancelled"
)

// Tool call statuses.
const (
	statusPending    = "pending"
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusFailed     = "failed"
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
	case statusPending, statusInProgress, statusCompleted, statusFailed:
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
	methodSessionSetModel   = "session/set_model"
	methodSessionPrompt     = "session/prompt"
	methodSessionCancel     = "session/cancel"
	methodCancelRequest     = "$/cancel_request"
	methodSessionUpdate     = "session/update"
	methodRequestPermission = "session/request_permission"
	methodSessionClose      = "session/close"

	// Client methods the server calls for the file and shell tools.
	methodReadTextFile    = "fs/read_text_file"
	methodWriteTextFile   = "fs/write_text_file"
	methodTerminalCreate  = "terminal/create"
	methodTerminalOutput  = "terminal/output"
	methodTerminalWait    = "terminal/wait_for_exit"
	methodTerminalKill    = "terminal/kill"
	methodTerminalRelease = "terminal/release"
)
