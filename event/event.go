package event

import "encoding/json"

// Kind is the value of the "event_kind" discriminator.
type Kind string

// The event kinds of docs/spec/EVENTS.md §2.
const (
	KindRunStarted        Kind = "run_started"
	KindPartStart         Kind = "part_start"
	KindPartDelta         Kind = "part_delta"
	KindPartEnd           Kind = "part_end"
	KindToolCallStart     Kind = "tool_call_start"
	KindToolCallProgress  Kind = "tool_call_progress"
	KindToolCallComplete  Kind = "tool_call_complete"
	KindPlanUpdate        Kind = "plan_update"
	KindStreamComplete    Kind = "stream_complete"
	KindRunError          Kind = "run_error"
	KindSpawnSessionStart Kind = "spawn_session_start"
	KindSpawnSessionEnd   Kind = "spawn_session_end"
	KindSubagent          Kind = "subagent"
	KindCustom            Kind = "custom"
)

// Kinds returns every kind, in the order of the spec table (a new slice
// each call: the list itself cannot be changed).
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

var kinds = []Kind{
	KindRunStarted, KindPartStart, KindPartDelta, KindPartEnd, KindToolCallStart,
	KindToolCallProgress, KindToolCallComplete, KindPlanUpdate, KindStreamComplete,
	KindRunError, KindSpawnSessionStart, KindSpawnSessionEnd, KindSubagent, KindCustom,
}

// Event is one event of a run. The interface is sealed.
type Event interface {
	Kind() Kind
	sealed()
}

// Part kinds and delta kinds.
const (
	PartText     = "text"
	PartThinking = "thinking"
	PartToolCall = "tool_call"
)

// Mechanism says who spawned a child session.
type Mechanism string

// Spawn mechanisms (who spawned).
const (
	MechanismTask   Mechanism = "task"
	MechanismWorker Mechanism = "worker"
	MechanismSpawn  Mechanism = "spawn"
	MechanismManual Mechanism = "manual"
)

// RunMode says how a child session runs relative to its parent.
type RunMode string

// Run modes (how a child runs).
const (
	RunModeSync  RunMode = "sync"
	RunModeAsync RunMode = "async"
)

// SourceType says what kind of node produced a session.
type SourceType string

// Source types.
const (
	SourceAgent          SourceType = "agent"
	SourceTeamParallel   SourceType = "team_parallel"
	SourceTeamSequential SourceType = "team_sequential"
)

// StopReason says why a run or child session ended.
type StopReason string

// Stop reasons.
const (
	StopCompleted StopReason = "completed"
	StopAborted   StopReason = "aborted"
	StopError     StopReason = "error"
	StopMaxTokens StopReason = "max_tokens"
	StopRefusal   StopReason = "refusal"
	// StopContextExhausted ends a run whose next model request does not
	// fit the model's context window even after compaction (agent
	// compaction: docs/control.md, Compaction).
	StopContextExhausted StopReason = "context_exhausted"
	// StopBudget ends a session whose next model call a budget refused
	// (spawn.BudgetError): the budget over it, its own or an ancestor's
	// or the run's, was reached.
	StopBudget StopReason = "budget"
	// StopInterrupted is never emitted live: it is written into the log
	// when a store recovers a run whose process died (docs/spec/EVENTS.md
	// §3 invariant 2), for the children that run left open.
	StopInterrupted StopReason = "interrupted"
)

// Tool call statuses (tool_call_progress).
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
)

// Usage counts tokens.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoning_tokens,omitempty"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.ReasoningTokens += o.ReasoningTokens
}

// Sub takes o from u: what Add added.
func (u *Usage) Sub(o Usage) {
	u.InputTokens -= o.InputTokens
	u.OutputTokens -= o.OutputTokens
	u.CacheReadTokens -= o.CacheReadTokens
	u.CacheWriteTokens -= o.CacheWriteTokens
	u.ReasoningTokens -= o.ReasoningTokens
}

// IsZero reports whether no tokens were counted.
func (u Usage) IsZero() bool { return u == Usage{} }

// Part is the part announced by part_start.
type Part struct {
	PartKind   string `json:"part_kind"`
	Content    string `json:"content,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	Args       string `json:"args,omitempty"`
}

// Delta is the change carried by part_delta.
type Delta struct {
	PartDeltaKind string `json:"part_delta_kind"`
	ContentDelta  string `json:"content_delta,omitempty"`
	ArgsDelta     string `json:"args_delta,omitempty"`
	ToolCallID    string `json:"tool_call_id,omitempty"`
}

// RunStarted opens a run of an agent in a session.
type RunStarted struct {
	SessionID       string `json:"session_id"`
	RunID           string `json:"run_id"`
	AgentName       string `json:"agent_name"`
	ParentSessionID string `json:"parent_session_id,omitempty"`
	// Model is the model the run uses when its caller chose one other
	// than the agent's own for it (pool.RunRequest.ModelOf: a client
	// picked another of the pool's models for this turn); "" otherwise.
	Model string `json:"model,omitempty"`
}

// PartStart opens a part (text, thinking or tool call) of the current response.
type PartStart struct {
	Index int  `json:"index"`
	Part  Part `json:"part"`
}

// PartDelta extends an open part.
type PartDelta struct {
	Index int   `json:"index"`
	Delta Delta `json:"delta"`
}

// PartEnd closes a part.
type PartEnd struct {
	Index int `json:"index"`
}

// ToolCallStart announces that a tool is about to run.
type ToolCallStart struct {
	ToolCallID string          `json:"tool_call_id"`
	ToolName   string          `json:"tool_name"`
	Title      string          `json:"title"`
	ToolKind   string          `json:"kind"`
	RawInput   json.RawMessage `json:"raw_input"`
	// Locations are the files the call touches, when the tool knows them
	// from its input (file tools), for editors that follow along.
	Locations []Location `json:"locations,omitempty"`
}

// Location is a file a tool call reads or changes; Line is 1-based, 0
// when the call concerns the whole file.
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// FileDiff is a change a tool made to a file, for front ends that show
// diffs. OldText is nil for a file the call created.
type FileDiff struct {
	Path    string  `json:"path"`
	OldText *string `json:"old_text,omitempty"`
	NewText string  `json:"new_text"`
}

// ProgressItem is one item of tool progress.
type ProgressItem struct {
	Type    string `json:"type"`
	Content string `json:"content,omitempty"`
}

// ToolCallProgress reports a tool call's status.
type ToolCallProgress struct {
	ToolCallID string         `json:"tool_call_id"`
	Status     string         `json:"status"`
	Title      string         `json:"title,omitempty"`
	Items      []ProgressItem `json:"items,omitempty"`
}

// ToolCallComplete carries a finished tool call and its result.
type ToolCallComplete struct {
	ToolCallID string          `json:"tool_call_id"`
	ToolName   string          `json:"tool_name"`
	ToolInput  json.RawMessage `json:"tool_input"`
	ToolResult string          `json:"tool_result"`
	IsError    bool            `json:"is_error,omitempty"`
	AgentName  string          `json:"agent_name"`
	// Locations, Diffs and Metadata are for front ends and never reach the
	// model: the files the call touched, the changes it made, and
	// tool-specific machine fields (exit_code, truncated, ...).
	Locations []Location     `json:"locations,omitempty"`
	Diffs     []FileDiff     `json:"diffs,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// PlanEntry is one entry of a plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
	// ActiveForm is the entry in the present continuous ("Running the
	// tests"), shown while it is in progress (Claude Code's todos).
	ActiveForm string `json:"active_form,omitempty"`
}

// PlanUpdate replaces the current plan.
type PlanUpdate struct {
	Entries []PlanEntry `json:"entries"`
}

// Message is the final message of a run, carried by stream_complete.
type Message struct {
	Role         string  `json:"role"`
	Content      string  `json:"content"`
	Usage        Usage   `json:"usage"`
	Cost         float64 `json:"cost,omitempty"`
	Model        string  `json:"model,omitempty"`
	FinishReason string  `json:"finish_reason"`
}

// StreamComplete closes a successful run.
type StreamComplete struct {
	Message Message `json:"message"`
}

// RunError closes a failed run.
type RunError struct {
	Message   string `json:"message"`
	Code      string `json:"code,omitempty"`
	RunID     string `json:"run_id,omitempty"`
	AgentName string `json:"agent_name,omitempty"`
}

// SpawnSessionStart announces a child session before any of its content.
type SpawnSessionStart struct {
	ChildSessionID  string         `json:"child_session_id"`
	ParentSessionID string         `json:"parent_session_id"`
	ToolCallID      string         `json:"tool_call_id,omitempty"`
	SpawnMechanism  Mechanism      `json:"spawn_mechanism"`
	RunMode         RunMode        `json:"run_mode"`
	SourceName      string         `json:"source_name"`
	SourceType      SourceType     `json:"source_type"`
	Depth           int            `json:"depth"`
	Description     string         `json:"description"`
	Metadata        map[string]any `json:"metadata"`
	ModelID         string         `json:"model_id,omitempty"`
	TaskID          string         `json:"task_id,omitempty"`
}

// SpawnSessionEnd closes a child session, exactly once, whatever happened.
type SpawnSessionEnd struct {
	ChildSessionID       string     `json:"child_session_id"`
	ParentSessionID      string     `json:"parent_session_id"`
	ToolCallID           string     `json:"tool_call_id,omitempty"`
	SourceName           string     `json:"source_name"`
	SourceType           SourceType `json:"source_type"`
	Depth                int        `json:"depth"`
	StopReason           StopReason `json:"stop_reason"`
	LastAssistantMessage string     `json:"last_assistant_message,omitempty"`
	Error                string     `json:"error,omitempty"`
	Usage                *Usage     `json:"usage,omitempty"`
	Cost                 float64    `json:"cost,omitempty"`
	DurationMS           int64      `json:"duration_ms"`
}

// Subagent wraps one event that a descendant session produced. It never
// wraps another Subagent (invariant 5).
type Subagent struct {
	SourceName      string     `json:"source_name"`
	SourceType      SourceType `json:"source_type"`
	Depth           int        `json:"depth"`
	ChildSessionID  string     `json:"child_session_id"`
	ParentSessionID string     `json:"parent_session_id"`
	ToolCallID      string     `json:"tool_call_id,omitempty"`
	Path            []string   `json:"path"`
	Event           Event      `json:"-"`
}

// Custom carries an application-defined event (hook runs, for example).
type Custom struct {
	EventType string         `json:"event_type"`
	EventData map[string]any `json:"event_data"`
	Source    string         `json:"source,omitempty"`
}

func (RunStarted) Kind() Kind        { return KindRunStarted }
func (PartStart) Kind() Kind         { return KindPartStart }
func (PartDelta) Kind() Kind         { return KindPartDelta }
func (PartEnd) Kind() Kind           { return KindPartEnd }
func (ToolCallStart) Kind() Kind     { return KindToolCallStart }
func (ToolCallProgress) Kind() Kind  { return KindToolCallProgress }
func (ToolCallComplete) Kind() Kind  { return KindToolCallComplete }
func (PlanUpdate) Kind() Kind        { return KindPlanUpdate }
func (StreamComplete) Kind() Kind    { return KindStreamComplete }
func (RunError) Kind() Kind          { return KindRunError }
func (SpawnSessionStart) Kind() Kind { return KindSpawnSessionStart }
func (SpawnSessionEnd) Kind() Kind   { return KindSpawnSessionEnd }
func (Subagent) Kind() Kind          { return KindSubagent }
func (Custom) Kind() Kind            { return KindCustom }

func (RunStarted) sealed()        {}
func (PartStart) sealed()         {}
func (PartDelta) sealed()         {}
func (PartEnd) sealed()           {}
func (ToolCallStart) sealed()     {}
func (ToolCallProgress) sealed()  {}
func (ToolCallComplete) sealed()  {}
func (PlanUpdate) sealed()        {}
func (StreamComplete) sealed()    {}
func (RunError) sealed()          {}
func (SpawnSessionStart) sealed() {}
func (SpawnSessionEnd) sealed()   {}
func (Subagent) sealed()          {}
func (Custom) sealed()            {}

// IsLifecycle reports whether e must never be dropped or coalesced by a
// consumer applying back-pressure (spawn start/end, stream completion,
// errors and tool completion). Wrapped events are judged by what they wrap.
func IsLifecycle(e Event) bool {
	if s, ok := e.(Subagent); ok {
		e = s.Event
	}
	switch e.(type) {
	case PartDelta, ToolCallProgress:
		return false
	}
	return true
}

// Unwrap returns the innermost event and the session it belongs to, given
// the session that owns the stream it was read from.
func Unwrap(owner string, e Event) (string, Event) {
	if s, ok := e.(Subagent); ok {
		return s.ChildSessionID, s.Event
	}
	return owner, e
}

// Sink receives events. See the package documentation for its contract.
type Sink interface {
	Emit(Event)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event)

// Emit calls f(e).
func (f SinkFunc) Emit(e Event) { f(e) }

// Discard is a Sink that drops everything.
var Discard Sink = SinkFunc(func(Event) {})
