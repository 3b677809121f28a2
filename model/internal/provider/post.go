package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentpool/agentpool/model"
)

// UserAgent is the User-Agent of every request.
const UserAgent = "agentpool"

// MaxErrorBody bounds how much of an error response is kept.
const MaxErrorBody = 64 << 10

// MaxRetryDelay caps the wait between two attempts: a server that asks
// (Retry-After) for a longer wait is not retried, its error is returned.
const MaxRetryDelay = 60 * time.Second

// Backoff between attempts when the server names no wait: BackoffBase
// doubled per retry, capped at BackoffMax, less up to a quarter of jitter.
const (
	BackoffBase = 500 * time.Millisecond
	BackoffMax  = 8 * time.Second
)

// CallState records what the attempts of one call saw.
type CallState struct {
	Attempts int    // HTTP requests made so far
	Status   int    // status of the last response; 0 when none came
	Body     []byte // body of the last response when its status is >= 300
}

// Answered reports whether the last response had a 2xx status: its stream
// began, so a failure from now on is a broken stream.
func (st *CallState) Answered() bool { return st.Status >= 200 && st.Status < 300 }

// errStatus is returned by Post for a final error status; the status and
// body are in the CallState.
var errStatus = errors.New("error status")

// Begin starts a call of req: the MissingKey error or the error of build
// (the provider's request conversion), else the encoded request body and a
// new CallState for Post.
func Begin[P any](e *Endpoint, req *model.Request, build func(*model.Request) (P, error)) (*CallState, []byte, error) {
	if err := e.MissingKey(); err != nil {
		return nil, nil, err
	}
	params, err := build(req)
	if err != nil {
		return nil, nil, err
	}
	body, err := json.Marshal(params)
	if err != nil {
		return nil, nil, e.NewError(0, "encode request: "+err.Error(), err)
	}
	return &CallState{}, body, nil
}

// URL is the URL of path (relative, "chat/completions") under the base
// URL, with the base URL's query. It keeps the base URL's user info,
// which the transport sends as basic authentication: show SafeBaseURL,
// never this.
func (e *Endpoint) URL(path string) string {
	u := strings.TrimSuffix(e.BaseURL, "/") + "/" + strings.TrimPrefix(path, "/")
	if len(e.Query) > 0 {
		u += "?" + e.Query.Encode()
	}
	return u
}

// Post sends body to e.URL(path) with header, retrying before any part
// of the answer is read: on a transport error, on 408, 409, 429 and 5xx
// (unless the server's X-Should-Retry says otherwise), at most e.Retries
// times. The wait between attempts is the server's Retry-After-Ms or
// Retry-After when it gives one (a wait above MaxRetryDelay ends the
// call), else a backoff with jitter. Each attempt is bounded by the
// configured timeout, through the reading of the returned body: close it
// to release the attempt.
//
// It returns the 2xx response, or an error: the context's, errStatus for
// an error status (st.Status and st.Body tell it; see Fail), or the
// transport's (without the URL, which may carry credentials).
func (e *Endpoint) Post(ctx context.Context, st *CallState, path string, header http.Header, body []byte) (*http.Response, error) {
	target := e.URL(path)
	for retry := 0; ; retry++ {
		res, err := e.attempt(ctx, st, target, header, body)
		if err == nil && res.StatusCode < 300 {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var wait time.Duration
		switch {
		case err != nil:
			if retry >= e.Retries {
				return nil, err
			}
			wait = Backoff(retry)
		default:
			d, asked := RetryAfter(res.Header, time.Now())
			if retry >= e.Retries || !shouldRetry(res) || asked && d > MaxRetryDelay {
				return nil, errStatus
			}
			wait = d
			if !asked {
				wait = Backoff(retry)
			}
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// attempt makes one request. An error status is read (MaxErrorBody at
// most) into st and its body closed; a 2xx response keeps its body open.
func (e *Endpoint) attempt(ctx context.Context, st *CallState, target string, header http.Header, body []byte) (*http.Response, error) {
	cancel := context.CancelFunc(func() {})
	if e.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, e.timeout)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, errors.New("bad request URL") // the URL is not shown: it may carry a key
	}
	if header != nil {
		req.Header = header.Clone()
	}
	st.Attempts++
	st.Status, st.Body = 0, nil
	res, err := e.HTTPClient.Do(req)
	if err != nil {
		cancel()
		return nil, stripURL(err)
	}
	st.Status = res.StatusCode
	if res.StatusCode >= 300 {
		st.Body, _ = io.ReadAll(io.LimitReader(res.Body, MaxErrorBody))
		_ = res.Body.Close()
		cancel()
		return res, nil
	}
	res.Body = &cancelBody{ReadCloser: res.Body, cancel: cancel}
	return res, nil
}

// cancelBody ends its attempt's context when it is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// stripURL drops the URL from an error of http.Client.Do: it may carry
// user info or a key in its query. The cause is kept.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// shouldRetry reports whether an error status may be retried: the
// server's X-Should-Retry when set, else 408, 409, 429 and 5xx.
func shouldRetry(res *http.Response) bool {
	switch res.Header.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	switch s := res.StatusCode; {
	case s == http.StatusRequestTimeout, s == http.StatusConflict, s == http.StatusTooManyRequests, s >= 500:
		return true
	}
	return false
}

// Backoff is the wait before retry n (from 0) when the server names none.
func Backoff(n int) time.Duration {
	d := BackoffMax
	if n < 5 {
		d = min(BackoffBase<<n, BackoffMax)
	}
	return d - rand.N(d/4+1)
}

// RetryAfter reads the wait a response asks for: Retry-After-Ms, or
// Retry-After in seconds or as an HTTP date (a past date is 0).
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
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

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Fail turns the error of a call into what Stream yields: the context's
// cause when ctx is done; for an error status, StatusError with the
// message and type that parse finds in the body; else CallError
// (streaming: the answer had begun).
func (e *Endpoint) Fail(ctx context.Context, st *CallState, err error, streaming bool, statusText func(int) string, parse func([]byte) (typ, msg string)) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	if errors.Is(err, errStatus) && st.Status >= 300 {
		typ, msg := parse(st.Body)
		x := e.StatusError(st, statusText(st.Status), msg, nil)
		x.Type = typ
		return x
	}
	return e.CallError(st, err, streaming)
}
