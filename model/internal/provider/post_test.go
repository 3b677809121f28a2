package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// server answers the n-th request (from 0) with respond and counts them.
func server(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		respond(w, r, int(n.Add(1)-1))
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func postEndpoint(t *testing.T, base string, retries int) *Endpoint {
	t.Helper()
	e, err := Setup(Config{Name: "prov", Model: "m", BaseURL: base, APIKey: key, URLForm: "http(s)://host", MaxRetries: retries, DefaultMaxRetries: 3})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Retried statuses are retried at once when Retry-After says 0, the
// error body is kept (bounded), and the last answer wins.
func TestPostRetriesThenSucceeds(t *testing.T) {
	s, n := server(t, func(w http.ResponseWriter, r *http.Request, i int) {
		if r.URL.Path != "/v1/x" || r.URL.RawQuery != "api-version=1" || r.Header.Get("X-A") != "b" {
			http.Error(w, "bad request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		if b, _ := io.ReadAll(r.Body); string(b) != `{"a":1}` {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		switch i {
		case 0:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, strings.Repeat("x", MaxErrorBody+10))
		case 1:
			w.Header().Set("Retry-After-Ms", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			_, _ = io.WriteString(w, "ok")
		}
	})
	e := postEndpoint(t, s.URL+"/v1?api-version=1", 0)
	st := &CallState{}
	res, err := e.Post(context.Background(), st, "x", http.Header{"X-A": {"b"}}, []byte(`{"a":1}`))
	if err != nil {
		t.Fatalf("err = %v (state %d %q)", err, st.Status, st.Body)
	}
	b, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if string(b) != "ok" || st.Attempts != 3 || n.Load() != 3 || !st.Answered() || st.Body != nil {
		t.Fatalf("body %q, attempts %d, requests %d, state %+v", b, st.Attempts, n.Load(), st.Status)
	}
}

func TestPostErrorStatus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		header   http.Header
		status   int
		attempts int
	}{
		{"not retried: 400", nil, http.StatusBadRequest, 1},
		{"not retried: 401", nil, http.StatusUnauthorized, 1},
		{"retries exhausted", http.Header{"Retry-After": {"0"}}, http.StatusBadGateway, 3},
		{"wait above MaxRetryDelay", http.Header{"Retry-After": {"61"}}, http.StatusTooManyRequests, 1},
		{"server says no retry", http.Header{"X-Should-Retry": {"false"}}, http.StatusServiceUnavailable, 1},
		{"server says retry", http.Header{"X-Should-Retry": {"true"}, "Retry-After": {"0"}}, http.StatusBadRequest, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, n := server(t, func(w http.ResponseWriter, r *http.Request, i int) {
				for k, v := range tc.header {
					w.Header()[k] = v
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, `{"error":{"message":"no"}}`)
			})
			e := postEndpoint(t, s.URL, 2)
			st := &CallState{}
			_, err := e.Post(context.Background(), st, "x", nil, nil)
			if err == nil || st.Status != tc.status || st.Attempts != tc.attempts || int(n.Load()) != tc.attempts {
				t.Fatalf("err %v, state %+v, requests %d", err, st, n.Load())
			}
			got := e.Fail(context.Background(), st, err, false, http.StatusText, func(b []byte) (string, string) { return ErrorMessage(b, false) })
			var x *Error
			if !errors.As(got, &x) || x.StatusCode != tc.status || x.Message != "no" || x.Attempts != tc.attempts {
				t.Fatalf("error %#v", got)
			}
		})
	}
}

// A transport error is retried, and its text never shows the URL, which
// carries a password and a key in its query.
func TestPostTransportErrorHidesURL(t *testing.T) {
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request, i int) {})
	s.Close() // nothing listens there any more
	e := postEndpoint(t, strings.Replace(s.URL, "http://", "http://user:pw-SECRET@", 1)+"/v1?key=q-SECRET", 1)
	st := &CallState{}
	_, err := e.Post(context.Background(), st, "x", nil, nil)
	if err == nil || st.Attempts != 2 || st.Status != 0 {
		t.Fatalf("err %v, state %+v", err, st)
	}
	x := e.Fail(context.Background(), st, err, false, http.StatusText, nil)
	for _, s := range []string{x.Error(), err.Error(), errors.Unwrap(x).Error()} {
		if strings.Contains(s, "SECRET") || strings.Contains(s, "/v1/x") {
			t.Fatalf("the URL shows: %s", s)
		}
	}
	if !strings.HasPrefix(x.Error(), "prov: request to http://127.0.0.1:") || !strings.HasSuffix(x.Error(), "(gave up after 2 attempts)") {
		t.Fatalf("err = %s", x)
	}
}

// Cancelling the context ends a wait between attempts at once.
func TestPostCancelDuringWait(t *testing.T) {
	got := make(chan struct{})
	s, n := server(t, func(w http.ResponseWriter, r *http.Request, i int) {
		w.Header().Set("Retry-After", "59")
		w.WriteHeader(http.StatusTooManyRequests)
		close(got)
	})
	e := postEndpoint(t, s.URL, 3)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := e.Post(ctx, &CallState{}, "x", nil, nil)
		done <- err
	}()
	<-got
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || n.Load() != 1 {
		t.Fatalf("err %v after %d requests", err, n.Load())
	}
}

// The timeout bounds each attempt, the reading of the answer included.
func TestPostTimeoutBoundsBody(t *testing.T) {
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request, i int) {
		_, _ = io.WriteString(w, "part")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	e, err := Setup(Config{Name: "prov", Model: "m", BaseURL: s.URL, Timeout: 50 * time.Millisecond, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	st := &CallState{}
	res, err := e.Post(context.Background(), st, "x", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_, err = io.ReadAll(res.Body)
	x := e.Fail(context.Background(), st, err, true, http.StatusText, nil)
	if x.Error() != "prov: request timed out after 50ms (timeout)" {
		t.Fatalf("err = %v (%v)", x, err)
	}
}

func TestBackoff(t *testing.T) {
	for n, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second} {
		for range 100 {
			if d := Backoff(n); d > want || d < want*3/4 {
				t.Fatalf("Backoff(%d) = %s, want in [%s, %s]", n, d, want*3/4, want)
			}
		}
	}
	if Backoff(1000) > BackoffMax {
		t.Fatal("no cap")
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct{ base, path, want string }{
		{"https://h/v1", "chat/completions", "https://h/v1/chat/completions"},
		{"https://h/v1/", "chat/completions", "https://h/v1/chat/completions"},
		{"https://h", "v1/messages", "https://h/v1/messages"},
		{"https://h/?b=2&a=1&a=0", "v1/messages", "https://h/v1/messages?a=1&a=0&b=2"},
	} {
		if got := postEndpoint(t, tc.base, 0).URL(tc.path); got != tc.want {
			t.Errorf("%s + %s = %s, want %s", tc.base, tc.path, got, tc.want)
		}
	}
}
func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second, true},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, true},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{}, 0, false},
	} {
		got, ok := RetryAfter(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v: got %s %v, want %s %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}
