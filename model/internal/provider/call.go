package provider

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// MaxErrorBody bounds how much of an error response is kept.
const MaxErrorBody = 64 << 10

// CallState records what the attempts of one call saw; the SDK middleware
// records into it with Observe.
type CallState struct {
	Attempts int    // HTTP requests made so far
	Status   int    // status of the last response; 0 when none came
	Body     []byte // body of the last response when its status is >= 400
}

type callKey struct{}

// Track returns a context that carries a new CallState for Observe.
func Track(ctx context.Context) (context.Context, *CallState) {
	st := &CallState{}
	return context.WithValue(ctx, callKey{}, st), st
}

// Answered reports whether the last response had a 2xx status: its stream
// began, so a failure from now on is a broken stream.
func (st *CallState) Answered() bool { return st.Status >= 200 && st.Status < 300 }

// Observe records one attempt: req is the request an SDK middleware sent,
// res its response (nil on a transport error). It counts the attempt and
// keeps the status and, for a status >= 400, the first MaxErrorBody bytes of
// the body, which it puts back in res for the SDK. It returns false, and
// does nothing, when req's context carries no CallState (see Track).
func Observe(req *http.Request, res *http.Response) bool {
	st, _ := req.Context().Value(callKey{}).(*CallState)
	if st == nil {
		return false
	}
	st.Attempts++
	st.Status, st.Body = 0, nil
	if res == nil {
		return true
	}
	st.Status = res.StatusCode
	if res.StatusCode >= 400 && res.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(res.Body, MaxErrorBody))
		_ = res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(body))
		st.Body = body
	}
	return true
}
