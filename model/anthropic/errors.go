package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// Error is how a model call failed: an HTTP error status from the server
// (after the retries), a transport failure, an error event in the stream
// or a broken stream. Its text never contains the API key.
type Error struct {
	// StatusCode is the HTTP status of the failed response; 0 when the
	// server did not answer with an error status.
	StatusCode int
	// Type is the API's error type (e.g. "overloaded_error"), when known.
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

// observe counts attempts, keeps the body of an error response and stops
// retries that the server wants delayed longer than MaxRetryDelay (the SDK
// would wait for any Retry-After).
func observe(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	st, _ := req.Context().Value(callKey{}).(*callState)
	if st == nil {
		return res, err
	}
	st.attempts++
	st.status, st.body = 0, nil
	if res == nil {
		return res, err
	}
	st.status = res.StatusCode
	if res.StatusCode >= 400 && res.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(body))
		st.body = body
	}
	if d, ok := retryAfter(res.Header, time.Now()); ok && d > MaxRetryDelay {
		res.Header.Set("X-Should-Retry", "false")
	}
	return res, err
}

// retryAfter reads Retry-After-Ms, or Retry-After in seconds or as an HTTP
// date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
			return time.Duration(math.Min(ms, float64(math.MaxInt64/int64(time.Millisecond))) * float64(time.Millisecond)), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || math.IsNaN(s) {
			return 0, false
		}
		if s > float64(math.MaxInt64/int64(time.Second)) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// wrap turns an error of the SDK into an *Error.
func (m *Model) wrap(st *callState, err error, streaming bool) error {
	var apiErr *sdk.Error
	isAPI := errors.As(err, &apiErr)
	if st.status >= 400 {
		typ, msg := errorMessage(st.body)
		text := fmt.Sprintf("%d %s", st.status, strings.ToLower(statusText(st.status)))
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
		e.Type, e.Message, e.Attempts = typ, m.redact(msg), st.attempts
		return e
	}
	var text, typ string
	switch {
	case isAPI:
		// An `event: error` in a stream that began with 200.
		typ = string(apiErr.Type())
		msg := apiErr.Message
		if msg == "" {
			_, msg = errorMessage([]byte(apiErr.RawJSON()))
		}
		text = "stream error: "
		if typ != "" {
			text += typ + ": "
		}
		text += msg
	case strings.HasPrefix(err.Error(), "received error while streaming: "):
		var raw string
		typ, raw = errorMessage([]byte(strings.TrimPrefix(err.Error(), "received error while streaming: ")))
		text = "stream error: " + raw
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
	e.Type, e.Attempts = typ, st.attempts
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

func (m *Model) newError(status int, text string, err error) *Error {
	text = m.redact(text)
	return &Error{StatusCode: status, Message: text, text: "anthropic: " + text, err: err}
}

// redact removes the API key from s.
func (m *Model) redact(s string) string {
	if m.key == "" {
		return s
	}
	return strings.ReplaceAll(s, m.key, "[redacted]")
}

// errorMessage finds the type and message in an error body:
// {"type": "error", "error": {"type", "message"}} (Anthropic), or
// {"error": "..."}, {"message"}; otherwise the body itself, shortened.
func errorMessage(body []byte) (typ, msg string) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return "", ""
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			return obj.Type, obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return "", s
		case v.Message != "":
			return "", v.Message
		}
	}
	return "", shorten(string(body))
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
