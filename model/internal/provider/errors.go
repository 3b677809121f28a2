package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Error is how a model call failed: an HTTP error status from the server
// (after the retries), a transport failure, an error event in the stream
// or a broken stream. Its text never contains the API key.
type Error struct {
	// StatusCode is the HTTP status of the failed response; 0 when the
	// server did not answer with an error status.
	StatusCode int
	// Type is the API's error type (e.g. "overloaded_error"), when the
	// provider reports one.
	Type string
	// Message is the server's message (or the cause), with the key
	// redacted.
	Message string
	// Attempts is the number of HTTP requests made (1 + retries).
	Attempts int

	text string
	err  error
}

func (e *Error) Error() string { return e.text }

// Unwrap returns the underlying error (the transport's, a JSON error).
func (e *Error) Unwrap() error { return e.err }

// Redact removes the API key from s.
func (e *Endpoint) Redact(s string) string {
	if e.key == "" {
		return s
	}
	return strings.ReplaceAll(s, e.key, "[redacted]")
}

// NewError returns an *Error of text, redacted, whose Error() is
// "<name>: <text>".
func (e *Endpoint) NewError(status int, text string, err error) *Error {
	text = e.Redact(text)
	return &Error{StatusCode: status, Message: text, text: e.name + ": " + text, err: err}
}

// StatusError is the failure of a call whose last response had the error
// status st.Status: "<status> <status text>[: msg]", a hint for 401, 403
// and 404, and the attempts when there were retries. statusText names the
// status; msg is the server's message, kept (redacted) as Message.
func (e *Endpoint) StatusError(st *CallState, statusText, msg string, err error) *Error {
	text := fmt.Sprintf("%d %s", st.Status, strings.ToLower(statusText))
	if msg != "" {
		// Redact before shortening: a cut through the key would leave a
		// part of it that no longer matches.
		text += ": " + shorten(e.Redact(msg))
	}
	switch st.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		text += fmt.Sprintf(" (check the API key: api_key / api_key_env in the manifest or %s)", e.envAPIKey)
	case http.StatusNotFound:
		text += fmt.Sprintf(" (model %q at %s)", e.model, e.SafeBaseURL)
	}
	x := e.NewError(st.Status, text+gaveUp(st), err)
	x.Message, x.Attempts = shorten(e.Redact(msg)), st.Attempts
	return x
}

// StreamError is an error event in a stream that began: "stream error:
// <msg>".
func (e *Endpoint) StreamError(st *CallState, msg string, err error) *Error {
	x := e.NewError(0, "stream error: "+shorten(e.Redact(msg)), err)
	x.Attempts = st.Attempts
	return x
}

// CallError is any other failure of a call: its attempt timed out, the
// stream broke (streaming: it had begun), or the request failed.
func (e *Endpoint) CallError(st *CallState, err error, streaming bool) *Error {
	var text string
	switch {
	case errors.Is(err, context.DeadlineExceeded) && e.timeout > 0:
		text = fmt.Sprintf("request timed out after %s (timeout)", e.timeout)
	case streaming:
		text = "stream broken: " + err.Error()
	default:
		text = fmt.Sprintf("request to %s failed: %v", e.SafeBaseURL, err) + gaveUp(st)
	}
	x := e.NewError(0, text, err)
	x.Attempts = st.Attempts
	return x
}

func gaveUp(st *CallState) string {
	if st.Attempts > 1 {
		return fmt.Sprintf(" (gave up after %d attempts)", st.Attempts)
	}
	return ""
}

// ErrorMessage finds the error type and message in an error body:
// {"error": {"type", "message"}} (OpenAI, Anthropic, vLLM, llama.cpp),
// {"error": "..."} (Ollama), {"message"}, and with detail {"detail"} (a
// string or any JSON value); otherwise the body itself, with its white
// space collapsed. The message is whole: the caller redacts it, then
// shortens it (StatusError), so that no cut can split a secret.
func ErrorMessage(body []byte, detail bool) (typ, msg string) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return "", ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Type    json.RawMessage `json:"type"`
			Message string          `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			_ = json.Unmarshal(obj.Type, &typ)
			return typ, obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return "", s
		case v.Message != "":
			return "", v.Message
		case detail && v.Detail != nil:
			if s, ok := v.Detail.(string); ok {
				return "", s
			}
			b, _ := json.Marshal(v.Detail)
			return "", string(b)
		}
	}
	return "", strings.Join(strings.Fields(string(body)), " ")
}

// shorten collapses white space and cuts s to 300 bytes (on a rune
// boundary). Redact first.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const n = 300
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
