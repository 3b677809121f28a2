package anthropic

import (
	"context"
	"net/http"

	"github.com/agentpool/agentpool/model/internal/provider"
)

// Error is how a model call failed: an HTTP error status from the server
// (after the retries), a transport failure, an error event in the stream
// or a broken stream. Its fields are StatusCode, Type (the API's error
// type, e.g. "overloaded_error", when known), Message (the server's
// message or the cause, with the key redacted) and Attempts (1 +
// retries). Its text never contains the API key.
type Error = provider.Error

// fail turns the error of a call into an *Error (or the context's cause).
func (m *Model) fail(ctx context.Context, st *provider.CallState, err error, streaming bool) error {
	return m.ep.Fail(ctx, st, err, streaming, statusText, errorMessage)
}

// streamError is the error of an `event: error` in a stream that began
// with 200: "stream error: <type>: <message>".
func (m *Model) streamError(st *provider.CallState, data []byte) error {
	typ, msg := errorMessage(data)
	if typ != "" {
		msg = typ + ": " + msg
	}
	e := m.ep.StreamError(st, msg, nil)
	e.Type = typ
	return e
}

func statusText(code int) string {
	if code == 529 {
		return "Overloaded"
	}
	if s := http.StatusText(code); s != "" {
		return s
	}
	return "error"
}

// errorMessage finds the type and message in an error body:
// {"type": "error", "error": {"type", "message"}} (Anthropic), or
// {"error": "..."}, {"message"}; otherwise the body itself, shortened.
func errorMessage(body []byte) (typ, msg string) {
	return provider.ErrorMessage(body, false)
}
