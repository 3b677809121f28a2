package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// gatedWriter is an SSE client's connection that accepts nothing until its
// gate opens, as a client whose event stream lags behind its prompt
// request.
type gatedWriter struct {
	gate chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
	hdr  http.Header
}

func (g *gatedWriter) Header() http.Header { return g.hdr }
func (g *gatedWriter) WriteHeader(int)     {}
func (g *gatedWriter) Flush()              {}
func (g *gatedWriter) Write(b []byte) (int, error) {
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(b)
}
func (g *gatedWriter) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.String()
}

// TestPromptAnswersAfterEventsAreDelivered: POST /session/{id}/message
// answers only once the event streams open when the turn ended have
// written every event of the turn, so a client that quits on the answer
// (`opencode run`) has been sent the final text. Before, the answer could
// overtake the stream and the client printed no answer (1 run in 15).
func TestPromptAnswersAfterEventsAreDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, nestedManifest(t))
		s := New(p, Options{Directory: "/work/project", Version: "test"})
		defer s.Close()

		sid := str(get(serve(t, s, "POST", "/session", `{}`), "id"))
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		sse := &gatedWriter{gate: make(chan struct{}), hdr: http.Header{}}
		streamDone := make(chan struct{})
		go func() {
			defer close(streamDone)
			s.ServeHTTP(sse, httptest.NewRequestWithContext(ctx, "GET", "/event", nil))
		}()
		synctest.Wait() // subscribed, blocked writing server.connected

		answered := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/session/"+sid+"/message", strings.NewReader(promptBody("go")))
			req.Header.Set("Content-Type", "application/json")
			s.ServeHTTP(rec, req)
			answered <- rec
		}()
		synctest.Wait() // the turn has ended; the answer waits for the stream
		select {
		case <-answered:
			t.Fatal("the prompt was answered before its events were written to the open event stream")
		default:
		}
		close(sse.gate)
		rec := <-answered
		if rec.Code != http.StatusOK {
			t.Fatalf("prompt: %d %s", rec.Code, rec.Body)
		}
		final := textOf(arr(get(decode(t, rec.Body.Bytes()), "parts")))
		if final == "" || !strings.Contains(sse.String(), final) {
			t.Fatalf("the stream had not been sent the answer %q when the prompt returned", final)
		}
		stop()
		<-streamDone
	})
}

// serve does one request on s in process and decodes its JSON answer.
func serve(t *testing.T, s *Server, method, path, body string) any {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	return decode(t, rec.Body.Bytes())
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}
