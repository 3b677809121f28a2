package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"strings"
)

// inputError is a client error in the body (400).
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func badInput(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// parseInput decodes and checks a RunAgentInput.
func parseInput(body []byte) (*wire.RunAgentInput, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, badInput("empty body: expected a wire.RunAgentInput JSON object")
	}
	if body[0] != '{' {
		return nil, badInput("malformed body: expected a wire.RunAgentInput JSON object")
	}
	// Presence of the required keys: a struct cannot tell absent from empty.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		return nil, badInput("malformed JSON body: %v", err)
	}
	for _, k := range []string{"threadId", "runId", "messages"} {
		v, ok := keys[k]
		if !ok || string(v) == "null" {
			return nil, badInput("missing required field %q", k)
		}
	}
	var in wire.RunAgentInput
	if err := json.Unmarshal(body, &in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, badInput("field %q: expected %s, got %s", te.Field, te.Type, te.Value)
		}
		return nil, badInput("malformed RunAgentInput: %v", err)
	}
	if strings.TrimSpace(in.ThreadID) == "" {
		return nil, badInput("threadId must not be empty")
	}
	if len(in.ThreadID) > MaxThreadIDBytes {
		return nil, badInput("threadId is longer than %d bytes (%d): use a shorter id, such as a UUID", MaxThreadIDBytes, len(in.ThreadID))
	}
	if strings.TrimSpace(in.RunID) == "" {
		return nil, badInput("runId must not be empty")
	}
	for i, m := range in.Messages {
		if m.Role == "" {
			return nil, badInput("messages[%d]: missing required field \"role\"", i)
		}
	}
	if r := bytes.TrimSpace(in.Resume); len(r) > 0 && string(r) != "null" && string(r) != "[]" {
		return nil, badInput("resume: this server never ends a run with an interrupt, so there is nothing to resume (a tool call that waits for approval is a CUSTOM approval_asked event, answered with POST /approvals/{id}: docs/agui.md, Approvals)")
	}
	if string(in.State) == "null" {
		in.State = nil
	}
	return &in, nil
}

// promptOf returns the text of the last user message: its content string, or
// the text parts of its content array joined by newlines (other parts are
// left out: the pool's models take text).
func promptOf(in *wire.RunAgentInput) (string, error) {
	for i := len(in.Messages) - 1; i >= 0; i-- {
		m := in.Messages[i]
		if m.Role != "user" {
			continue
		}
		text, err := contentText(m.Content)
		if err != nil {
			return "", badInput("messages[%d].content: %v", i, err)
		}
		if strings.TrimSpace(text) == "" {
			return "", badInput("messages[%d]: the last user message has no text content", i)
		}
		return text, nil
	}
	return "", badInput("messages holds no user message: nothing to run")
}

func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", fmt.Errorf("expected a string or an array of content parts: %v", err)
		}
		var texts []string
		for _, p := range parts {
			if p.Type == "text" && p.Text != "" {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n"), nil
	default:
		return "", errors.New("expected a string or an array of content parts")
	}
}

// hasRole reports whether in has a message of that role.
func hasRole(in *wire.RunAgentInput, role string) bool {
	for _, m := range in.Messages {
		if m.Role == role {
			return true
		}
	}
	return false
}
