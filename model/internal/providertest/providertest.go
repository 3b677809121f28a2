// Package providertest has the test helpers that the model providers'
// tests share: a fake API server that records requests, server-sent event
// writers, and functions that run a model.Model's stream and compare what
// it yields. It is for tests only.
package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/model"
)

// Server is a fake provider API: it takes POST requests with a JSON body
// at one path, records each and answers with respond(w, r, n) (n counts
// requests from 0). Any other request is answered 418. When the test ends,
// the context of every request is cancelled and the server is closed.
type Server struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	queries []url.Values
	raws    [][]byte
	paths   []string
	times   []time.Time // when each request was read
}

// NewServer starts a Server for path ("/v1/messages").
func NewServer(t testing.TB, path string, respond func(w http.ResponseWriter, r *http.Request, n int)) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != path {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		s.queries = append(s.queries, r.URL.Query())
		s.raws = append(s.raws, raw)
		s.paths = append(s.paths, r.URL.RequestURI())
		s.times = append(s.times, time.Now())
		s.mu.Unlock()
		respond(w, r, n)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	s.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	s.Start()
	t.Cleanup(func() {
		cancel()
		s.Close()
	})
	return s
}

// Requests is the number of requests received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// Body is the JSON body of request i.
func (s *Server) Body(i int) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

// Header is the header of request i.
func (s *Server) Header(i int) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[i]
}

// Query is the URL query of request i.
func (s *Server) Query(i int) url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[i]
}

// WantRetry fails the test unless the server got exactly two requests, the
// same body twice, the second at least wait after the first.
func (s *Server) WantRetry(t testing.TB, wait time.Duration) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bodies) != 2 {
		t.Fatalf("requests = %d, want 2", len(s.bodies))
	}
	if d := s.times[1].Sub(s.times[0]); d < wait {
		t.Fatalf("retried after %s, want at least %s", d, wait)
	}
	if !reflect.DeepEqual(s.bodies[0], s.bodies[1]) {
		t.Fatal("the retry sent a different body")
	}
}

// NewModel builds a model with newModel from cfg as mod changes it (when
// not nil), failing the test on an error.
func NewModel[C, M any](t testing.TB, newModel func(C) (M, error), cfg C, mod func(*C)) M {
	t.Helper()
	if mod != nil {
		mod(&cfg)
	}
	m, err := newModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Hold keeps the response to r open: it returns when the client goes away
// or, for a request to a Server, when the test ends.
func Hold(r *http.Request) {
	<-r.Context().Done()
}

// Event is one server-sent event: `event: <Name>` (left out when Name is
// empty) and `data: <Data>`.
type Event struct{ Name, Data string }

// SSE answers 200 with events as a text/event-stream, flushing each.
func SSE(w http.ResponseWriter, events ...Event) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		if e.Name != "" {
			fmt.Fprintf(w, "event: %s\n", e.Name)
		}
		fmt.Fprintf(w, "data: %s\n\n", e.Data)
		w.(http.Flusher).Flush()
	}
}

// SSEData is SSE of events that have data only.
func SSEData(w http.ResponseWriter, data ...string) {
	events := make([]Event, len(data))
	for i, d := range data {
		events[i].Data = d
	}
	SSE(w, events...)
}

// Hello is a request of one user message.
func Hello() *model.Request {
	return &model.Request{Messages: []model.Message{model.UserText("Say hello")}}
}

// ToolConversation is a request that exercises the conversion of every
// part: a system prompt; a user text; an assistant message of thinking,
// text and two tool calls ("call_1" lookup with arguments, "call_2" noargs
// without); a tool message of both results, the second an error; a
// synthetic user note; and two tools, get_weather (a schema with
// additionalProperties) and get_time (no schema).
func ToolConversation() *model.Request {
	return &model.Request{
		System: "You are terse.",
		Messages: []model.Message{
			model.UserText("Weather and time?"),
			{Role: model.RoleAssistant, Parts: []model.Part{
				{Kind: model.PartThinking, Text: "need tools"},
				{Kind: model.PartText, Text: "Checking."},
				{Kind: model.PartToolCall, ToolCallID: "call_1", ToolName: "lookup", Args: json.RawMessage(`{"q":"x"}`)},
				{Kind: model.PartToolCall, ToolCallID: "call_2", ToolName: "noargs"},
			}},
			{Role: model.RoleTool, Parts: []model.Part{
				{Kind: model.PartToolResult, ToolCallID: "call_1", ToolName: "lookup", Text: "found x"},
				{Kind: model.PartToolResult, ToolCallID: "call_2", ToolName: "noargs", Text: "boom", IsError: true},
			}},
			{Role: model.RoleUser, Parts: []model.Part{{Kind: model.PartText, Text: "[async result]"}}, Synthetic: true},
		},
		Tools: []model.ToolSpec{
			{Name: "get_weather", Description: "Weather of a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)},
			{Name: "get_time"},
		},
	}
}

// Collect runs a stream to its end (or its error).
func Collect(t testing.TB, m model.Model, req *model.Request) ([]model.Chunk, error) {
	t.Helper()
	var out []model.Chunk
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

// CancelAfterFirst runs a stream and cancels its context once the first
// chunk arrived; it returns the chunks and the error that ended it.
func CancelAfterFirst(t testing.TB, m model.Model, req *model.Request) ([]model.Chunk, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []model.Chunk
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			return got, err
		}
		got = append(got, c)
		cancel()
	}
	return got, nil
}

// StopsEarly checks that a consumer can stop a stream after its first
// chunk.
func StopsEarly(t testing.TB, m model.Model, req *model.Request) {
	t.Helper()
	n := 0
	for range m.Stream(context.Background(), req) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d chunks before the consumer stopped", n)
	}
}

// Concurrently runs n streams of m at once; each must end without error
// after want chunks.
func Concurrently(t testing.TB, m model.Model, req *model.Request, n, want int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			got, err := Collect(t, m, req)
			if err != nil || len(got) != want {
				t.Errorf("got %v, %v", got, err)
			}
		})
	}
	wg.Wait()
}

// WantStream runs a stream of m to its end and fails the test unless it
// ends without error after yielding want.
func WantStream(t testing.TB, m model.Model, req *model.Request, want []model.Chunk) {
	t.Helper()
	got, err := Collect(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	WantChunks(t, got, want)
}

// WantChunks fails the test unless got equals want.
func WantChunks(t testing.TB, got, want []model.Chunk) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("chunks:\n got %+v\nwant %+v", got, want)
	}
}

// JSONEqual fails the test unless got (decoded JSON) equals the JSON text
// want.
func JSONEqual(t testing.TB, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON for %s: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Fatalf("%s:\n got %s\nwant %s", what, g, want)
	}
}
