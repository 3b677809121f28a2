package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/agentpool/agentpool/internal/jsonstr"
)

// ProtocolVersion is the AG-UI protocol version this server speaks.
const ProtocolVersion = "1.0"

// AG-UI event types (the "type" discriminator).
const (
	TypeRunStarted              = "RUN_STARTED"
	TypeRunFinished             = "RUN_FINISHED"
	TypeRunError                = "RUN_ERROR"
	TypeStepStarted             = "STEP_STARTED"
	TypeStepFinished            = "STEP_FINISHED"
	TypeTextMessageStart        = "TEXT_MESSAGE_START"
	TypeTextMessageContent      = "TEXT_MESSAGE_CONTENT"
	TypeTextMessageEnd          = "TEXT_MESSAGE_END"
	TypeToolCallStart           = "TOOL_CALL_START"
	TypeToolCallArgs            = "TOOL_CALL_ARGS"
	TypeToolCallEnd             = "TOOL_CALL_END"
	TypeToolCallResult          = "TOOL_CALL_RESULT"
	TypeReasoningStart          = "REASONING_START"
	TypeReasoningMessageStart   = "REASONING_MESSAGE_START"
	TypeReasoningMessageContent = "REASONING_MESSAGE_CONTENT"
	TypeReasoningMessageEnd     = "REASONING_MESSAGE_END"
	TypeReasoningEnd            = "REASONING_END"
	TypeStateSnapshot           = "STATE_SNAPSHOT"
	TypeStateDelta              = "STATE_DELTA"
	TypeCustom                  = "CUSTOM"
	TypeSubagentStarted         = "SUBAGENT_STARTED"
	TypeSubagentFinished        = "SUBAGENT_FINISHED"
	TypeSubagentError           = "SUBAGENT_ERROR"
	TypeActivitySnapshot        = "ACTIVITY_SNAPSHOT"
	TypeActivityDelta           = "ACTIVITY_DELTA"
)

// Event is one AG-UI event. Only the fields of its Type are written, in a
// fixed order; optional fields are omitted when empty (never null), so the
// same struct serves every type. AppendJSON is the one encoder.
type Event struct {
	Type      string
	Timestamp int64 // Unix milliseconds; omitted when 0

	// SubagentRunID attributes the event to a subagent (the child session
	// id); for SUBAGENT_* events it names the subagent itself.
	SubagentRunID string

	ThreadID        string // RUN_STARTED, RUN_FINISHED
	RunID           string // RUN_STARTED, RUN_FINISHED
	ParentRunID     string // RUN_STARTED
	ProtocolVersion string // RUN_STARTED

	MessageID       string // text, reasoning, TOOL_CALL_RESULT, ACTIVITY_*
	ActivityType    string // ACTIVITY_SNAPSHOT, ACTIVITY_DELTA
	Role            string // TEXT_MESSAGE_START, REASONING_MESSAGE_START, TOOL_CALL_RESULT
	Delta           string // *_CONTENT, TOOL_CALL_ARGS; ACTIVITY_DELTA with AppendPath
	ToolCallID      string
	ToolCallName    string
	ParentMessageID string // TOOL_CALL_START, SUBAGENT_STARTED
	Content         string // TOOL_CALL_RESULT (required, may be empty)
	StepName        string

	Name                string // SUBAGENT_STARTED, CUSTOM
	Description         string // SUBAGENT_STARTED
	ParentSubagentRunID string // SUBAGENT_STARTED
	ParentToolCallID    string // SUBAGENT_STARTED

	Message string // RUN_ERROR, SUBAGENT_ERROR
	Code    string // RUN_ERROR, SUBAGENT_ERROR

	Result  string // RUN_FINISHED, SUBAGENT_FINISHED (a JSON string); omitted when empty
	Outcome string // RUN_FINISHED outcome type ("cancelled"); omitted when empty

	Snapshot json.RawMessage // STATE_SNAPSHOT, ACTIVITY_SNAPSHOT's content ({} when empty)
	Patch    json.RawMessage // STATE_DELTA's delta, ACTIVITY_DELTA's patch: a JSON Patch array ([] when empty)
	Metadata json.RawMessage // TOOL_CALL_RESULT's metadata object; omitted when empty
	Value    json.RawMessage // CUSTOM ({} when empty)

	// AppendPath, on an ACTIVITY_DELTA, makes its patch the one op
	// {"op":"add","path":AppendPath,"value":Delta} (a path ending in
	// "/-": Delta is appended to a list), encoded here rather than
	// marshaled: it is the event a subagent's every token becomes.
	AppendPath string
}

// MarshalJSON implements json.Marshaler.
func (e *Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// AppendJSON appends the event's JSON object to dst.
func (e *Event) AppendJSON(dst []byte) []byte {
	w := objWriter{b: append(dst, '{')}
	w.str("type", e.Type)
	if e.Timestamp != 0 {
		w.key("timestamp")
		w.b = strconv.AppendInt(w.b, e.Timestamp, 10)
	}
	switch e.Type {
	case TypeRunStarted, TypeRunFinished, TypeRunError:
		// Run-scoped: never attributed to a subagent.
	default:
		w.opt("subagentRunId", e.SubagentRunID)
	}
	switch e.Type {
	case TypeRunStarted:
		w.str("threadId", e.ThreadID)
		w.str("runId", e.RunID)
		w.opt("parentRunId", e.ParentRunID)
		w.opt("protocolVersion", e.ProtocolVersion)
	case TypeRunFinished:
		w.str("threadId", e.ThreadID)
		w.str("runId", e.RunID)
		w.opt("result", e.Result)
		if e.Outcome != "" {
			w.key("outcome")
			w.b = append(w.b, `{"type":`...)
			w.b = jsonstr.Append(w.b, e.Outcome)
			w.b = append(w.b, '}')
		}
	case TypeRunError, TypeSubagentError:
		w.str("message", e.Message)
		w.opt("code", e.Code)
	case TypeStepStarted, TypeStepFinished:
		w.str("stepName", e.StepName)
	case TypeTextMessageStart, TypeReasoningMessageStart:
		w.str("messageId", e.MessageID)
		w.opt("role", e.Role)
	case TypeTextMessageContent, TypeReasoningMessageContent:
		w.str("messageId", e.MessageID)
		w.str("delta", e.Delta)
	case TypeTextMessageEnd, TypeReasoningStart, TypeReasoningMessageEnd, TypeReasoningEnd:
		w.str("messageId", e.MessageID)
	case TypeToolCallStart:
		w.str("toolCallId", e.ToolCallID)
		w.str("toolCallName", e.ToolCallName)
		w.opt("parentMessageId", e.ParentMessageID)
	case TypeToolCallArgs:
		w.str("toolCallId", e.ToolCallID)
		w.str("delta", e.Delta)
	case TypeToolCallEnd:
		w.str("toolCallId", e.ToolCallID)
	case TypeToolCallResult:
		w.str("messageId", e.MessageID)
		w.str("toolCallId", e.ToolCallID)
		w.str("content", e.Content)
		w.opt("role", e.Role)
		if len(e.Metadata) > 0 {
			w.raw("metadata", e.Metadata)
		}
	case TypeStateSnapshot:
		w.raw("snapshot", e.Snapshot)
	case TypeStateDelta:
		w.rawArray("delta", e.Patch)
	case TypeActivitySnapshot:
		w.str("messageId", e.MessageID)
		w.str("activityType", e.ActivityType)
		w.raw("content", e.Snapshot)
	case TypeActivityDelta:
		w.str("messageId", e.MessageID)
		w.str("activityType", e.ActivityType)
		if e.AppendPath == "" {
			w.rawArray("patch", e.Patch)
			break
		}
		w.key("patch")
		w.b = append(w.b, `[{"op":"add","path":`...)
		w.b = jsonstr.Append(w.b, e.AppendPath)
		w.b = append(w.b, `,"value":`...)
		w.b = jsonstr.Append(w.b, e.Delta)
		w.b = append(w.b, "}]"...)
	case TypeCustom:
		w.str("name", e.Name)
		w.raw("value", e.Value)
	case TypeSubagentStarted:
		w.str("name", e.Name)
		w.opt("description", e.Description)
		w.opt("parentSubagentRunId", e.ParentSubagentRunID)
		w.opt("parentToolCallId", e.ParentToolCallID)
		w.opt("parentMessageId", e.ParentMessageID)
	case TypeSubagentFinished:
		w.opt("result", e.Result)
	}
	return append(w.b, '}')
}

// AppendSSE appends the event as one server-sent event: "data: <json>\n\n".
func (e *Event) AppendSSE(dst []byte) []byte {
	dst = append(dst, "data: "...)
	dst = e.AppendJSON(dst)
	return append(dst, '\n', '\n')
}

type objWriter struct {
	b     []byte
	comma bool
}

func (w *objWriter) key(k string) {
	if w.comma {
		w.b = append(w.b, ',')
	}
	w.comma = true
	w.b = jsonstr.Append(w.b, k)
	w.b = append(w.b, ':')
}

func (w *objWriter) str(k, v string) {
	w.key(k)
	w.b = jsonstr.Append(w.b, v)
}

func (w *objWriter) opt(k, v string) {
	if v != "" {
		w.str(k, v)
	}
}

// raw writes a JSON value; an empty or null value becomes {} (the fields
// that use it are required and must not be null).
func (w *objWriter) raw(k string, v json.RawMessage) { w.rawOr(k, v, "{}") }

// rawArray writes a JSON array; an empty, null or non-array value becomes
// [] (an empty JSON Patch).
func (w *objWriter) rawArray(k string, v json.RawMessage) {
	if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '[' {
		v = nil
	}
	w.rawOr(k, v, "[]")
}

func (w *objWriter) rawOr(k string, v json.RawMessage, empty string) {
	w.key(k)
	if len(v) == 0 || string(v) == "null" {
		w.b = append(w.b, empty...)
		return
	}
	// Compact: a raw value from a client may span lines, and a newline
	// would end the SSE data field early.
	buf := bytes.NewBuffer(w.b)
	if err := json.Compact(buf, v); err != nil {
		w.b = append(w.b, empty...)
		return
	}
	w.b = buf.Bytes()
}
