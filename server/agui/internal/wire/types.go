package wire

import "encoding/json"

// RunAgentInput is the body of a run request. threadId, runId and messages
// are required; the rest is optional. tools, context, forwardedProps and
// resume are accepted and ignored (the pool has no client-side tools and
// never interrupts).
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
