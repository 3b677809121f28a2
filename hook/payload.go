package hook

import (
	"encoding/json"
	"slices"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
)

// Provider is the value of SubagentStart.Provider and SubagentEnd.Provider
// for children run by this process's spawn runtime.
const Provider = "agentpool"

// Session sources (SessionStart.Source).
const (
	SourceStartup = "startup"
	SourceResume  = "resume"
)

// SessionStart is the payload of session/start: a root session begins (a
// root run, or the first run of a session its caller keeps open across
// runs: pool.RunRequest.KeepSession).
type SessionStart struct {
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`  // the agent or team the run starts
	Source    string `json:"source"` // startup (no history yet) or resume
	// Model is the model id of the agent the run starts ("" for a team).
	Model string `json:"model,omitempty"`
}

// Why a root session ended (SessionEnd.Cause).
const (
	// CauseRunEnded: the root run ended, and with it the session (every
	// session but those kept open across runs: pool.RunRequest.KeepSession).
	CauseRunEnded = "run_ended"
	// CauseClosed: the front end closed a session it kept open.
	CauseClosed = "closed"
	// CauseDisconnected: the front end that kept the session open went
	// away (its connection or input ended).
	CauseDisconnected = "disconnected"
)

// SessionEnd is the payload of session/end: a root session ended, with
// all of its children (the end of its run, or, for a session kept open
// across runs, when its front end closed it).
type SessionEnd struct {
	SessionID string           `json:"session_id"`
	Agent     string           `json:"agent"`
	Reason    event.StopReason `json:"reason"` // the stop reason of the session's last run (event.Stop*)
	Cause     string           `json:"cause"`  // CauseRunEnded, CauseClosed or CauseDisconnected
}

// Prompt is the input of agent/prompt-submit.
type Prompt struct {
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	Content   string `json:"content"`
}

// PromptDecision answers agent/prompt-submit. The zero value allows.
type PromptDecision struct {
	Block   bool   `json:"block,omitempty"`
	Reason  string `json:"reason,omitempty"`  // why it was blocked
	Context string `json:"context,omitempty"` // extra context for the model (when allowed)
}

// ModelRequest is the input of agent/request. Request is the session's own
// copy: a listener may change it (or return another one).
type ModelRequest struct {
	Agent     string         `json:"agent"`
	SessionID string         `json:"session_id"`
	Request   *model.Request `json:"request"`
}

// ToolCall is the input of tools/pre-execute. Input is a frozen copy of
// the arguments: changing it changes nothing that runs (use
// agent.ToolDecision.UpdatedInput).
type ToolCall struct {
	Agent     string          `json:"agent"`
	SessionID string          `json:"session_id"`
	ToolName  string          `json:"tool_name"`
	CallID    string          `json:"call_id"`
	Input     json.RawMessage `json:"input"`
}

// ToolOutcome is the input of tools/post-execute and the payload of
// tools/result: the call and its result (copies).
type ToolOutcome struct {
	ToolCall
	Result  string `json:"result"`
	IsError bool   `json:"is_error,omitempty"`
	// DurationMS is how long the tool ran: from the end of
	// tools/pre-execute (approval done) to its result.
	DurationMS int64 `json:"duration_ms"`
	// Interrupted reports that the run was cancelled while the tool ran.
	Interrupted bool `json:"interrupted,omitempty"`
}

// PostDecision answers tools/post-execute. The zero value accepts.
type PostDecision struct {
	// Block adds Feedback to the result the model sees.
	Block    bool   `json:"block,omitempty"`
	Feedback string `json:"feedback,omitempty"`
	// Context is extra context for the model's next request.
	Context string `json:"context,omitempty"`
}

// TurnStop is the input of agent/turn-stop: the model answered without tool
// calls and the agent is about to stop. A session with a parent is a
// subagent.
type TurnStop struct {
	Agent           string `json:"agent"`
	SessionID       string `json:"session_id"`
	ParentSessionID string `json:"parent_session_id,omitempty"`
	Depth           int    `json:"depth"`
	FinalMessage    string `json:"final_message"`
}

// IsSubagent reports whether the stopping session is a delegated child.
func (t TurnStop) IsSubagent() bool { return t.ParentSessionID != "" }

// PreCompact is the input of agent/pre-compact: older turns of the
// session's conversation are about to be summarised (docs/control.md,
// Compaction).
type PreCompact struct {
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	// Trigger is "auto" (the next request neared the context window) or
	// "manual" (asked for: OpenCode's summarize).
	Trigger string `json:"trigger"`
	// Instructions are a manual compaction's own ("" for auto).
	Instructions string `json:"instructions,omitempty"`
}

// StopDecision answers agent/turn-stop. The zero value stops.
type StopDecision struct {
	Continue bool   `json:"continue,omitempty"`
	Reason   string `json:"reason,omitempty"` // the next user message when continuing
}

// ApprovalRequest is the input of approval/request: a tool call that needs
// a human (or a policy) to approve it. It is snapshotted when received.
type ApprovalRequest struct {
	Agent     string          `json:"agent"`
	SessionID string          `json:"session_id"`
	ToolName  string          `json:"tool_name"`
	CallID    string          `json:"call_id"`
	Input     json.RawMessage `json:"input,omitempty"`
	Reason    string          `json:"reason,omitempty"` // why approval is asked
	// RequestID, when set, is the id of the request stored for this call
	// by a run whose process died while it waited (docs/approvals.md,
	// Durable), asked again by the run that goes on with it
	// (Registry.ResumeApproval): the broker shows it with that id.
	RequestID string `json:"request_id,omitempty"`
}

// Approval outcomes (ApprovalDecision.Outcome).
const (
	AllowedOnce   = "allowed_once"
	AllowedAlways = "allowed_always" // this tool, for the rest of the session
	Rejected      = "rejected"
	Cancelled     = "cancelled"
	Unavailable   = "unavailable" // nobody could answer
)

// ApprovalDecision answers approval/request. Fail closed: an empty or
// unknown Outcome counts as Unavailable, which denies.
type ApprovalDecision struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	// UpdatedInput, when set with an allowing outcome, replaces the tool's
	// arguments.
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
}

// Allowed reports whether the outcome lets the tool run.
func (d ApprovalDecision) Allowed() bool {
	return d.Outcome == AllowedOnce || d.Outcome == AllowedAlways
}

// SubagentStart is the payload of subagent/start: a child session is ready
// (stored and registered: it can be looked up and injected into) and has
// not made its first model request.
type SubagentStart struct {
	Provider    string          `json:"provider"`
	ID          string          `json:"id"` // the child session id
	ParentID    string          `json:"parent_id"`
	Name        string          `json:"name"` // the delegated agent or team
	Depth       int             `json:"depth"`
	Mechanism   event.Mechanism `json:"mechanism"` // task, worker, spawn or manual
	RunMode     event.RunMode   `json:"run_mode"`  // sync or async
	ParentAgent string          `json:"parent_agent,omitempty"`
}

// SubagentEnd is the payload of subagent/end, fired exactly once per child
// whose subagent/start fired.
type SubagentEnd struct {
	Provider    string           `json:"provider"`
	ID          string           `json:"id"`
	ParentID    string           `json:"parent_id"`
	Name        string           `json:"name"`
	ParentAgent string           `json:"parent_agent,omitempty"`
	StopReason  event.StopReason `json:"stop_reason"`
	// LastAssistantMessage is the child's final output (content blocks),
	// each listener's own deep copy; absent on an infrastructure fault.
	LastAssistantMessage []model.Part `json:"last_assistant_message,omitempty"`
	Usage                *event.Usage `json:"usage,omitempty"`
	DurationMS           int64        `json:"duration_ms"`
}

// cloneParts is a variable so that a test can make the copy fail.
var cloneParts = model.CloneParts

func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return slices.Clone(r)
}

func cloneRequest(r *model.Request) *model.Request {
	if r == nil {
		return nil
	}
	c := *r
	c.Messages = model.CloneMessages(r.Messages)
	if r.Tools != nil {
		c.Tools = make([]model.ToolSpec, len(r.Tools))
		for i, t := range r.Tools {
			t.Parameters = cloneRaw(t.Parameters)
			c.Tools[i] = t
		}
	}
	return &c
}

func cloneToolCall(c ToolCall) ToolCall {
	c.Input = cloneRaw(c.Input)
	return c
}

func cloneOutcome(o ToolOutcome) ToolOutcome {
	o.ToolCall = cloneToolCall(o.ToolCall)
	return o
}

func cloneApprovalDecision(d ApprovalDecision) ApprovalDecision {
	d.UpdatedInput = cloneRaw(d.UpdatedInput)
	return d
}

func cloneApproval(a ApprovalRequest) ApprovalRequest {
	a.Input = cloneRaw(a.Input)
	return a
}

func cloneSubagentEnd(e SubagentEnd) SubagentEnd {
	if e.LastAssistantMessage != nil {
		e.LastAssistantMessage = cloneParts(e.LastAssistantMessage)
	}
	if e.Usage != nil {
		u := *e.Usage
		e.Usage = &u
	}
	return e
}
