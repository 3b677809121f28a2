package a2aagent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
)

// TestSSEData: events end at a blank line, their data lines are joined,
// other fields and comments are skipped, a last event without its blank
// line counts, and an event over the bound is an error.
func TestSSEData(t *testing.T) {
	in := ": comment\nid: 1\nevent: x\ndata: {\"a\":\ndata: 1}\n\ndata:two\n\n\n\ndata: three"
	var got []string
	for d, err := range sseData(strings.NewReader(in)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(d))
	}
	if want := []string{"{\"a\":\n1}", "two", "three"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
	big := "data: " + strings.Repeat("x", maxEventBytes) + "\n\n"
	var last error
	for _, err := range sseData(strings.NewReader(big)) {
		last = err
	}
	if !errors.Is(last, errTooLarge) {
		t.Errorf("an event over %d bytes: %v", maxEventBytes, last)
	}
}

// TestNonStreamingAgent: an agent whose card does not stream gets
// message/send, and a Message answer is the delegation's answer; the
// headers go with every request.
func TestNonStreamingAgent(t *testing.T) {
	var (
		mu      sync.Mutex
		methods []string
	)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("GET /a/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "k" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"name":"a","url":"`+srv.URL+`/a","protocolVersion":"0.3.0","capabilities":{},"skills":[],"defaultInputModes":[],"defaultOutputModes":[],"description":"","version":"1"}`)
	})
	mux.HandleFunc("POST /a", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Header.Get("X-Key") != "k":
			w.WriteHeader(http.StatusUnauthorized)
		case strings.Contains(string(b), `"method":"message/send"`):
			methods = append(methods, "message/send")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"hello back"}]}}`)
		default:
			methods = append(methods, string(b))
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`)
		}
	})
	n, err := New(Config{Name: "a", URL: srv.URL + "/a", Headers: map[string]string{"X-Key": "k"}})
	if err != nil {
		t.Fatal(err)
	}
	card, err := n.card(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var evs []a2a.Event
	for ev, err := range n.c.send(context.Background(), card, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hi"})}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evs) != 1 || len(methods) != 1 || methods[0] != "message/send" {
		t.Fatalf("events %v, methods %v", evs, methods)
	}
	tr := &turn{n: n, inv: &spawn.Invocation{Sink: event.Discard}}
	if !tr.apply(evs[0]) || tr.answer() != "hello back" || tr.state != a2a.TaskStateCompleted {
		t.Errorf("answer %q, state %s", tr.answer(), tr.state)
	}
	mu.Unlock()
	err = n.c.cancel(context.Background(), card, "t1")
	mu.Lock()
	if err == nil || !strings.Contains(err.Error(), "A2A error -32601: no") {
		t.Errorf("a JSON-RPC error answer: %v", err)
	}
}
