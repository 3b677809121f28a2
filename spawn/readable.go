package spawn

import (
	"encoding/json"
	"strings"

	"github.com/agentpool/agentpool/event"
)

// ReadableResult turns the result of a tool that ran a child session
// (task, ask_<worker>, a team member's spawn, task_output) into the text
// a person reads in a front end: the child's answer, "Cancelled by the
// user." or "Failed: <why>" in words, never the JSON the model gets nor
// raw Go error text. sessionID is the child session's id and stopReason
// its stop reason ("" while a background task runs), the machine fields a
// front end puts in metadata. ok is false for a result that did not come
// from a child session; text is then content unchanged.
func ReadableResult(content string) (text, sessionID, stopReason string, ok bool) {
	trimmed := strings.TrimSpace(content)
	if !strings.HasPrefix(trimmed, "{") {
		return content, "", "", false
	}
	var r struct {
		Output     *string `json:"output"`
		SessionID  string  `json:"session_id"`
		StopReason string  `json:"stop_reason"`
		Status     string  `json:"status"` // task_output
		TaskID     string  `json:"task_id"`
		Error      string  `json:"error"`
	}
	if json.Unmarshal([]byte(trimmed), &r) != nil || r.SessionID == "" {
		return content, "", "", false
	}
	stop := r.StopReason
	if stop == "" && r.Status != "running" {
		stop = r.Status
	}
	output := ""
	if r.Output != nil {
		output = *r.Output
	}
	switch {
	case r.TaskID != "" && r.Output == nil:
		text = "Running in the background as task " + r.TaskID + "."
	case stop == "" || stop == string(event.StopCompleted) || stop == string(event.StopMaxTokens):
		text = output
	case stop == string(event.StopAborted):
		text = joinLines(output, AbortedWords(r.Error))
	default:
		why := ReadableError(r.Error)
		if why == "" {
			why = "the child session ended with " + stop
		}
		text = joinLines(output, "Failed: "+why)
	}
	return text, r.SessionID, stop, true
}

// ReadableError words an error a child session ended with for a person:
// a cancellation or a deadline in words instead of Go's "context
// canceled" and "context deadline exceeded", and a model's failure (the
// agent's "model ID: cause") with its cause first: "cause (model ID)".
func ReadableError(msg string) string {
	msg = strings.TrimSpace(msg)
	switch {
	case msg == "":
		return ""
	case strings.HasSuffix(msg, "context canceled"):
		return "cancelled by the user"
	case strings.HasSuffix(msg, "context deadline exceeded"):
		return "timed out"
	}
	if rest, ok := strings.CutPrefix(msg, "model "); ok {
		if id, cause, ok := strings.Cut(rest, ": "); ok && id != "" && !strings.ContainsAny(id, " \t\n") && strings.TrimSpace(cause) != "" {
			return ReadableError(cause) + " (model " + id + ")"
		}
	}
	return msg
}

// AbortedWords words the end of a child session that was aborted, from
// the error it ended with: "Cancelled by the user (from <front end>)."
// when it was cancelled on its own (a *CancelledError), else "Cancelled by
// the user." (its run was); "Stopped by its parent agent <name>
// (task_stop)." when its parent stopped it.
func AbortedWords(msg string) string {
	const parent = "stopped by its parent agent "
	if i := strings.Index(msg, parent); i >= 0 {
		return "Stopped by its parent agent " + strings.TrimSuffix(msg[i+len(parent):], " (task_stop)") + " (task_stop)."
	}
	const by = "cancelled by the user (from "
	if i := strings.Index(msg, by); i >= 0 {
		rest := msg[i+len(by):]
		if j := strings.IndexByte(rest, ')'); j >= 0 {
			return "Cancelled by the user (from " + rest[:j] + ")."
		}
	}
	return "Cancelled by the user."
}

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}
