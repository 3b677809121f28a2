package anthropic

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentpool/agentpool/model/internal/provider"
)

// Error is how a model call failed: an HTTP error status from the server
// (after the retries), a transport failure, an error event in the stream
// or a broken stream. Its fields are StatusCode, Type (the API's error
// type, e.g. "overloaded_error", when known), Message (the server's
// message or the cause, with the key redacted) and Attempts (1 +
// retries). Its text never contains the API key.
type Error = provider.Error

// observe counts attempts, keeps the body of an error response and stops
// retries that the server wants delayed longer than MaxRetryDelay (the SDK
// would wait for any Retry-After).
func observe(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if !provider.Observe(req, res) || res == nil {
		return res, err
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
func (m *Model) wrap(st *provider.CallState, err error, streaming bool) error {
	if st.Status >= 400 {
		typ, msg := errorMessage(st.Body)
		e := m.ep.StatusError(st, statusText(st.Status), msg, err)
		e.Type = typ
		return e
	}
	const streamingPrefix = "received error while streaming: "
	var (
		apiErr   *sdk.Error
		typ, msg string
	)
	switch {
	case errors.As(err, &apiErr):
		// An `event: error` in a stream that began with 200.
		typ, msg = string(apiErr.Type()), apiErr.Message
		if msg == "" {
			_, msg = errorMessage([]byte(apiErr.RawJSON()))
		}
		if typ != "" {
			msg = typ + ": " + msg
		}
	case strings.HasPrefix(err.Error(), streamingPrefix):
		typ, msg = errorMessage([]byte(strings.TrimPrefix(err.Error(), streamingPrefix)))
	default:
		return m.ep.CallError(st, err, streaming)
	}
	e := m.ep.StreamError(st, msg, err)
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
