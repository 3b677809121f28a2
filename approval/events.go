package approval

import (
	"encoding/json"
	"fmt"

	"github.com/agentpool/agentpool/event"
)

// The custom events that store a request in the log of the session it
// belongs to, so that a process reading the store (a server started again,
// the submitter of a durable run) finds the requests still waiting.
const (
	// EventRequested: event_data is a Request.
	EventRequested = "approval_requested"
	// EventReplied: event_data is an Answered.
	EventReplied = "approval_replied"
	// EventSource is the events' source.
	EventSource = "approvals"
)

// Answered is the event_data of an approval_replied event: how request
// RequestID was settled.
type Answered struct {
	RequestID string `json:"request_id"`
	Answer
}

// RequestedEvent is the approval_requested event of req.
func RequestedEvent(req Request) event.Custom {
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		// A model's arguments that are not JSON are kept as their text.
		req.Input, _ = json.Marshal(string(req.Input))
	}
	return event.Custom{EventType: EventRequested, EventData: toData(req), Source: EventSource}
}

// RepliedEvent is the approval_replied event of an answer to requestID.
func RepliedEvent(requestID string, a Answer) event.Custom {
	return event.Custom{EventType: EventReplied, EventData: toData(Answered{RequestID: requestID, Answer: a}), Source: EventSource}
}

// ParseRequested returns the request of an approval_requested event; ok
// is false for any other event, an error for one whose data is not a
// request with an id, a session and a tool.
func ParseRequested(e event.Event) (req Request, ok bool, err error) {
	c, isCustom := e.(event.Custom)
	if !isCustom || c.EventType != EventRequested {
		return Request{}, false, nil
	}
	if err := fromData(c.EventData, &req); err != nil {
		return Request{}, true, fmt.Errorf("approval: %s event: %w", EventRequested, err)
	}
	if req.ID == "" || req.SessionID == "" || req.Tool == "" {
		return Request{}, true, fmt.Errorf("approval: %s event names no request id, session or tool", EventRequested)
	}
	return req, true, nil
}

// ParseReplied returns the answer of an approval_replied event; ok is
// false for any other event.
func ParseReplied(e event.Event) (r Answered, ok bool, err error) {
	c, isCustom := e.(event.Custom)
	if !isCustom || c.EventType != EventReplied {
		return Answered{}, false, nil
	}
	if err := fromData(c.EventData, &r); err != nil {
		return Answered{}, true, fmt.Errorf("approval: %s event: %w", EventReplied, err)
	}
	if r.RequestID == "" || !r.Reply.valid() {
		return Answered{}, true, fmt.Errorf("approval: %s event names no request id or an unknown reply %q", EventReplied, r.Reply)
	}
	return r, true, nil
}

// toData is v's JSON object as a map (event.Custom's data).
func toData(v any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		// Request and Replied hold strings, times and raw JSON that was
		// valid when asked: marshalling cannot fail but for a bad Input.
		return map[string]any{"error": err.Error()}
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

func fromData(m map[string]any, v any) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
