package mcp

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP transports against go-sdk servers on loopback: listing,
// calling, and the configured headers on every request.
func TestHTTPTransports(t *testing.T) {
	ms := newMemServer(t, nil)
	getServer := func(*http.Request) *sdk.Server { return ms.srv }
	var mu sync.Mutex
	seen := map[string]int{} // X-Agentpool-Test values
	record := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[r.Header.Get("X-Agentpool-Test")]++
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	}
	streamable := httptest.NewServer(record(sdk.NewStreamableHTTPHandler(getServer, nil)))
	defer streamable.Close()
	sse := httptest.NewServer(record(sdk.NewSSEHandler(getServer, nil)))
	defer sse.Close()

	headers := map[string]string{"X-Agentpool-Test": "yes"}
	m := newManager(t,
		ServerConfig{Name: "web", URL: streamable.URL, Headers: headers},
		ServerConfig{Name: "old", Transport: "sse", URL: sse.URL, Headers: headers},
	)
	for _, name := range []string{"web", "old"} {
		ts := toolset(t, m, name)
		if n := len(listAll(t, ts)); n != 6 {
			t.Errorf("%s: %d tools, want 6", name, n)
		}
		wantOK(t, call(t, ts, "mcp__"+name+"__echo", map[string]string{"text": name}), "echo: "+name)
		if st := status(m, name); st.State != StateConnected {
			t.Errorf("%s: status %+v", name, st)
		}
	}
	// Close before the HTTP servers: their Close waits for open streams.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["yes"] == 0 || len(seen) != 1 {
		t.Errorf("X-Agentpool-Test headers seen = %v, want only \"yes\"", seen)
	}
}
