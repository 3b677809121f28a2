package sessiontree

import (
	"encoding/json"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// Change is one change of the session tree. The concrete types are
// SessionCreated, SessionUpdated, MessageUpdated, PartUpdated, PartDelta,
// SessionIdle, SessionError and PlanUpdated.
type Change interface {
	// Session is the id of the session the change belongs to.
	Session() string
	change()
}

// SessionCreated: a session appeared (OpenCode session.created).
type SessionCreated struct{ Info session.Session }

// SessionUpdated: a session's record changed, for example its status
// (OpenCode session.updated; session.status follows from Info.Status).
type SessionUpdated struct{ Info session.Session }

// MessageUpdated: a message was created or changed (OpenCode
// message.updated).
type MessageUpdated struct{ Info Message }

// PartUpdated: a part was created or changed (OpenCode
// message.part.updated). Part holds the whole part.
type PartUpdated struct{ Part Part }

// PartDelta: text was appended to a text or reasoning part (OpenCode
// message.part.delta). Field is "text".
type PartDelta struct {
	SessionID, MessageID, PartID string
	Field                        string
	Delta                        string
}

// SessionIdle: a session stopped running (OpenCode session.idle).
type SessionIdle struct{ SessionID string }

// SessionError: a session's run failed (OpenCode session.error).
type SessionError struct {
	SessionID string
	// Code is the run_error code ("model_error", "aborted", ...) or the
	// stop reason when the end carried no run_error.
	Code    string
	Message string
}

// PlanUpdated: a session's plan (its todo list) was replaced by a
// plan_update (OpenCode todo.updated). Entries is the whole new plan.
type PlanUpdated struct {
	SessionID string
	Entries   []event.PlanEntry
}

func (c SessionCreated) Session() string { return c.Info.ID }
func (c SessionUpdated) Session() string { return c.Info.ID }
func (c MessageUpdated) Session() string { return c.Info.SessionID }
func (c PartUpdated) Session() string    { return c.Part.SessionID }
func (c PartDelta) Session() string      { return c.SessionID }
func (c SessionIdle) Session() string    { return c.SessionID }
func (c SessionError) Session() string   { return c.SessionID }
func (c PlanUpdated) Session() string    { return c.SessionID }

func (SessionCreated) change() {}
func (SessionUpdated) change() {}
func (MessageUpdated) change() {}
func (PartUpdated) change()    {}
func (PartDelta) change()      {}
func (SessionIdle) change()    {}
func (SessionError) change()   {}
func (PlanUpdated) change()    {}

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is a message of the projection (OpenCode's message info).
type Message struct {
	ID        string
	SessionID string
	Role      string // RoleUser or RoleAssistant
	// ParentID is, for an assistant message, the user message it answers
	// (empty when the stream did not carry it, as for a root's prompt).
	ParentID  string
	Agent     string
	ModelID   string
	Created   time.Time
	Completed time.Time // zero while the message is open
	Usage     event.Usage
	Cost      float64
	Finish    string // finish reason of the last model response
	Error     string // set when the run failed in this message
}

// PartType is the OpenCode part type.
type PartType string

// Part types.
const (
	PartText      PartType = "text"
	PartReasoning PartType = "reasoning"
	PartTool      PartType = "tool"
)

// ToolStatus is the OpenCode tool state.
type ToolStatus string

// Tool states.
const (
	ToolPending   ToolStatus = "pending"
	ToolRunning   ToolStatus = "running"
	ToolCompleted ToolStatus = "completed"
	ToolError     ToolStatus = "error"
)

// ToolState is the state of a tool part.
type ToolState struct {
	Status ToolStatus
	Input  json.RawMessage // the arguments, once known ({} until then)
	Raw    string          // the argument text streamed so far (pending)
	Title  string
	Output string // completed
	Error  string // error
	// Metadata holds "sessionId" and "parentSessionId" on a part that
	// spawned a child session, and the spawn's mechanism and run mode.
	Metadata map[string]any
	// Locations, Diffs and ToolMetadata are the tool's own report for
	// front ends: the files the call touches (tool_call_start, then
	// tool_call_complete), the changes it made and its machine fields
	// (exit_code, todos, truncated, ...) from tool_call_complete.
	Locations    []event.Location
	Diffs        []event.FileDiff
	ToolMetadata map[string]any
	Start        time.Time
	End          time.Time
}

// Part is a part of a message.
type Part struct {
	ID        string
	SessionID string
	MessageID string
	Type      PartType
	Text      string // text, reasoning
	Start     time.Time
	End       time.Time // zero while the part is open
	// Tool parts.
	CallID string
	Tool   string
	State  ToolState
}

// Child returns the id of the child session a tool part points at, or "".
func (p Part) Child() string {
	s, _ := p.State.Metadata["sessionId"].(string)
	return s
}
