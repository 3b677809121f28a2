package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// Error is how a model call failed: an HTTP error status from the server
// (after the retries), a transport failure, an error event in the stream
// or a broken stream. Its text never contains the API key.
type Error struct {
	// StatusCode is the HTTP status of the failed response; 0 when the
	// server did not answer with an error status.
	StatusCode int
	// Message is the server's message (or the cause), with the key
	// redacted.
	Message string
	// Attempts is the number of HTTP requests made (1 + retries).
	Attempts int

	text string
	err  error
}

func (e *Error) Error() string { return e.text }

// Unwrap returns the underlying error of the SDK or the transport.
func (e *Error) Unwrap() error { return e.err }

// callState records what the attempts of one call saw; the middleware
// finds it in the request's context.
type callState struct {
	attempts int
	status   int    // status of the last response
	body     []byte // body of the last response when its status is >= 400
}

type callKey struct{}

// maxErrorBody bounds how much of an error response is kept.
const maxErrorBody = 64 << 10

// observe counts attempts and keeps the body of an error response, which
// the SDK only parses when it has the OpenAI shape.
func observe(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	st, _ := req.Context().Value(callKey{}).(*callState)
	if st == nil {
		return res, err
	}
	st.attempts++
	st.status, st.body = 0, nil
	if res != nil {
		st.status = res.StatusCode
		if res.StatusCode >= 400 && res.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
			_ = res.Body.Close()
			res.Body = io.NopCloser(bytes.NewReader(body))
			st.body = body
		}
	}
	return res, err
}

// wrap turns an error of the SDK into an *Error (or the context's cause).
func (m *Model) wrap(ctx context.Context, st *callState, err error, streaming bool) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	if st.status >= 400 {
		msg := errorMessage(st.body)
		text := fmt.Sprintf("%d %s", st.status, strings.ToLower(http.StatusText(st.status)))
		if msg != "" {
			text += ": " + msg
		}
		switch st.status {
		case http.StatusUnauthorized, http.StatusForbidden:
			text += fmt.Sprintf(" (check the API key: api_key / api_key_env in the manifest or %s)", EnvAPIKey)
		case http.StatusNotFound:
			text += fmt.Sprintf(" (model %q at %s)", m.cfg.Model, m.baseURL)
		}
		if st.attempts > 1 {
			text += fmt.Sprintf(" (gave up after %d attempts)", st.attempts)
		}
		e := m.newError(st.status, text, err)
		e.Message = m.redact(msg)
		e.Attempts = st.attempts
		return e
	}
	var se *ssestream.StreamError
	var text string
	switch {
	case errors.As(err, &se):
		msg := errorMessage(se.Event.Data)
		if msg == "" {
			msg = se.Message
		}
		text = "stream error: " + msg
	case errors.Is(err, context.DeadlineExceeded) && m.cfg.Timeout > 0:
		text = fmt.Sprintf("request timed out after %s (timeout)", m.cfg.Timeout)
	case streaming:
		text = "stream broken: " + err.Error()
	default:
		text = fmt.Sprintf("request to %s failed: %v", m.baseURL, err)
		if st.attempts > 1 {
			text += fmt.Sprintf(" (gave up after %d attempts)", st.attempts)
		}
	}
	e := m.newError(0, text, err)
	e.Attempts = st.attempts
	return e
}

func (m *Model) newError(status int, text string, err error) *Error {
	text = m.redact(text)
	return &Error{StatusCode: status, Message: text, text: "openai: " + text, err: err}
}

// redact removes the API key from s.
func (m *Model) redact(s string) string {
	if m.key == "" {
		return s
	}
	return strings.ReplaceAll(s, m.key, "[redacted]")
}

// errorMessage finds the message in an error body: {"error": {"message"}}
// (OpenAI, vLLM, llama.cpp), {"error": "..."} (Ollama), {"message"} or
// {"detail"}; otherwise the body itself, shortened.
func errorMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var s string
		var obj struct {
			Message string `json:"message"`
		}
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			return obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		case v.Detail != nil:
			if s, ok := v.Detail.(string); ok {
				return s
			}
			b, _ := json.Marshal(v.Detail)
			return shorten(string(b))
		}
	}
	return shorten(string(body))
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const n = 300
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// safeURL drops the user info (a password) of a URL.
func safeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}
