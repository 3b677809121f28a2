package wire

import "encoding/json"

// RunAgentInput is the body of a run request. threadId, runId and messages
// are required; the rest is optional. tools and context are decoded by
// the server (package agui, frontend.go); forwardedProps is ignored.
type RunAgentInput struct {
	ThreadID        string          `json:"threadId"`
	RunID           string          `json:"runId"`
	ParentRunID     string          `json:"parentRunId,omitempty"`
	ProtocolVersion string          `json:"protocolVersion,omitempty"`
	State           json.RawMessage `json:"state,omitempty"`
	Messages        []InputMessage  `json:"messages"`
	Tools           json.RawMessage `json:"tools,omitempty"`
	Context         json.RawMessage `json:"context,omitempty"`
	ForwardedProps  json.RawMessage `json:"forwardedProps,omitempty"`
	Resume          json.RawMessage `json:"resume,omitempty"`
}

// InputMessage is one message of RunAgentInput.messages; only what the
// server reads is decoded.
type InputMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content,omitempty"`
	// ToolCallID and Error are a tool message's: the call it answers,
	// and the error the client's tool ended with.
	ToolCallID string `json:"toolCallId,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Tool is one entry of RunAgentInput.tools: a tool the client runs.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Context is one entry of RunAgentInput.context.
type Context struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// AgentInfo is one entry of GET /agents.
type AgentInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Type is "agent", "team_parallel" or "team_sequential".
	Type    string `json:"type"`
	Default bool   `json:"default,omitempty"`
}

// TodoItem is one entry of the todo list in the AG-UI state.
type TodoItem struct {
	Content  string `json:"content"`
	Status   string `json:"status"` // pending, in_progress, completed
	Priority string `json:"priority"`
	// ActiveForm is the entry in the present continuous, shown while it is
	// in progress; omitted when the agent gave none.
	ActiveForm string `json:"activeForm,omitempty"`
}

// Approval is a tool call waiting for a person's answer: the value of the
// CUSTOM event approval_asked, and an entry of GET /approvals.
type Approval struct {
	ID string `json:"id"` // per_…, answered by POST /approvals/{id}
	// SessionID is the session the tool runs in (a subagent's own);
	// ParentSessionID its parent, absent for a thread's root session.
	SessionID       string `json:"sessionId"`
	ParentSessionID string `json:"parentSessionId,omitempty"`
	Agent           string `json:"agent"`
	Tool            string `json:"tool"`
	Title           string `json:"title"` // one line for a person: "Write notes/a.md"
	// Input is the tool's input, a JSON object ({} when it has none).
	Input json.RawMessage `json:"input"`
	// ToolCallID is the call's toolCallId in TOOL_CALL_START, when known.
	ToolCallID string `json:"toolCallId,omitempty"`
	// Reason says which rule asked.
	Reason string `json:"reason,omitempty"`
	// Options are the answers POST /approvals/{id} takes.
	Options []string `json:"options"`
	// ThreadID and RunID name the run whose stream showed the request
	// (GET /approvals only).
	ThreadID string `json:"threadId,omitempty"`
	RunID    string `json:"runId,omitempty"`
}

// ApprovalReplied is the value of the CUSTOM event approval_replied: how
// an approval shown earlier in the stream was settled.
type ApprovalReplied struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	// Reply is allow_once, allow_always, reject_once or reject_always (a
	// withdrawn request: reject_once, by "cancelled").
	Reply string `json:"reply"`
	// By is who answered: "agui", another front end ("opencode", "acp",
	// ...), or the broker itself ("rule", "timeout", "cancelled").
	By      string `json:"by"`
	Message string `json:"message,omitempty"`
}
