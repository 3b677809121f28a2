package servertest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/session/storetest"
)

// WaitBound is how long a wait of this package blocks before it fails
// the test: far longer than any expected wait, so that only a bug (a
// notice that never comes) reaches it.
const WaitBound = time.Minute

// Pool returns a pool of the manifest src (YAML) with default options,
// closed when the test ends.
func Pool(t testing.TB, src string) *pool.Pool {
	t.Helper()
	return PoolWith(t, src, pool.Options{})
}

// PoolWith returns a pool of the manifest src with opts (a store, hooks),
// closed when the test ends.
func PoolWith(t testing.TB, src string, opts pool.Options) *pool.Pool {
	t.Helper()
	var copts config.Options
	if opts.Registry != nil {
		copts.ModelTypes = opts.Registry.ModelTypes() // a test's own model types (BlockingRegistry)
	}
	m, err := config.ParseWith("agentpool.yaml", []byte(src), copts)
	if err != nil {
		t.Fatalf("servertest: the test manifest: %v", err)
	}
	p, err := pool.New(m, opts)
	if err != nil {
		t.Fatalf("servertest: pool.New: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// FaultyPool returns a pool of src on a memory store wrapped in
// storetest.Faulty, and that store: the test fails its writes like a full
// disk (FailAfter) and gives the room back (Lift).
func FaultyPool(t testing.TB, src string) (*pool.Pool, *storetest.Faulty) {
	t.Helper()
	st := storetest.NewFaulty(memory.New())
	return PoolWith(t, src, pool.Options{Store: st}), st
}

// NoLeaks fails the test if a goroutine it started is still there once
// its other cleanups (servers, pools) have run. Call it first in the test:
// cleanups run last registered first, so its check runs after them. It
// closes the default client's idle connections, whose goroutines are not
// the code's.
func NoLeaks(t testing.TB) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		goleak.VerifyNone(t, opt)
	})
}

// Serve serves h on a loopback httptest.Server, closed when the test ends.
// Close waits for the outstanding requests: a test may close it itself to
// know that every handler (and what it waits for) has returned.
func Serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// Answer is an HTTP answer, read whole.
type Answer struct {
	Code   int
	Header http.Header
	Body   string
}

// Do makes one request with the default client and reads the answer
// whole. body "" sends none; hdr are name, value pairs ("Host" sets the
// request's host). A request that gets no answer fails the test.
func Do(t testing.TB, method, url, body string, hdr ...string) Answer {
	t.Helper()
	if len(hdr)%2 != 0 {
		t.Fatalf("servertest.Do: header %q has no value", hdr[len(hdr)-1])
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatalf("servertest.Do: %v", err)
	}
	for i := 0; i < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("servertest.Do %s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("servertest.Do %s %s: reading the answer: %v", method, url, err)
	}
	return Answer{Code: res.StatusCode, Header: res.Header, Body: string(b)}
}

// PostJSON posts a JSON body (Content-Type: application/json, then hdr).
func PostJSON(t testing.TB, url, body string, hdr ...string) Answer {
	t.Helper()
	return Do(t, "POST", url, body, append([]string{"Content-Type", "application/json"}, hdr...)...)
}

// Ends records the session/end notices of a hook registry, so that a test
// waits for a run's end rather than polling the store.
type Ends struct {
	mu     sync.Mutex
	ends   []hook.SessionEnd
	notice chan struct{} // closed and replaced at each end
}

// NewEnds registers an OnSessionEnd hook on reg that records every end.
func NewEnds(reg *hook.Registry) *Ends {
	e := &Ends{notice: make(chan struct{})}
	reg.OnSessionEnd.Register(func(_ context.Context, se hook.SessionEnd) error {
		e.mu.Lock()
		e.ends = append(e.ends, se)
		close(e.notice)
		e.notice = make(chan struct{})
		e.mu.Unlock()
		return nil
	})
	return e
}

// All returns the ends recorded so far, in order.
func (e *Ends) All() []hook.SessionEnd {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]hook.SessionEnd(nil), e.ends...)
}

// Wait returns the first recorded end that match accepts, waiting for it;
// it fails the test after WaitBound.
func (e *Ends) Wait(t testing.TB, match func(hook.SessionEnd) bool) hook.SessionEnd {
	t.Helper()
	timeout := time.NewTimer(WaitBound)
	defer timeout.Stop()
	for {
		e.mu.Lock()
		for _, se := range e.ends {
			if match(se) {
				e.mu.Unlock()
				return se
			}
		}
		notice := e.notice
		e.mu.Unlock()
		select {
		case <-notice:
		case <-timeout.C:
			t.Fatalf("servertest: no matching session/end in %s; ends so far: %+v", WaitBound, e.All())
		}
	}
}

// Session matches the end of session id (for Ends.Wait).
func Session(id string) func(hook.SessionEnd) bool {
	return func(se hook.SessionEnd) bool { return se.SessionID == id }
}

// Agent matches the end of a session of agent name (for Ends.Wait).
func Agent(name string) func(hook.SessionEnd) bool {
	return func(se hook.SessionEnd) bool { return se.Agent == name }
}
