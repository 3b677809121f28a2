package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentpool/agentpool/tool"
)

// garbageHTTPServer is a streamable-http go-sdk server whose tools answer
// with bytes that are not JSON-RPC (200, application/json), as a broken
// proxy or a crashed backend would: "garbage" a line of them, "flood"
// 64 MiB. maxFlood is the most of a flood one response got written
// before the client stopped reading it.
func garbageHTTPServer(t *testing.T) (hs *httptest.Server, maxFlood *atomic.Int64) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "garbage-http", Version: "1"}, nil)
	for _, name := range []string{"garbage", "flood"} {
		srv.AddTool(&sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "clean"}}}, nil
			})
	}
	maxFlood = new(atomic.Int64)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		switch {
		case bytes.Contains(body, []byte(`"name":"garbage"`)):
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("<html>502 bad gateway</html> this is not JSON-RPC\n"))
		case bytes.Contains(body, []byte(`"name":"flood"`)):
			w.Header().Set("Content-Type", "application/json")
			chunk := bytes.Repeat([]byte("garbage "), 8<<10)
			var written int64
			for written < 64<<20 {
				n, err := w.Write(chunk)
				written += int64(n)
				if err != nil {
					break
				}
			}
			for cur := maxFlood.Load(); written > cur && !maxFlood.CompareAndSwap(cur, written); cur = maxFlood.Load() {
			}
		default:
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	return hs, maxFlood
}

// TestMCPGarbageIsolated: one MCP server that starts emitting garbage
// (a stdio server writing non-JSON-RPC lines on stdout, an HTTP server
// answering non-JSON-RPC, or 64 MiB of it) fails only its own calls, with
// an error naming it; the calls in flight on another server at that moment
// complete, and that server's session is never dropped. A body past
// maxResponseBody is not read further: the SDK would read it whole, and a
// server answering without end would take the memory of the process.
func TestMCPGarbageIsolated(t *testing.T) {
	ms := newMemServer(t, nil)
	entered := make(chan struct{})
	release := make(chan struct{})
	ms.srv.AddTool(&sdk.Tool{Name: "wait", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "waited"}}}, nil
		})
	stdioCfg, pids := helperServer(t, "badstdio", "")
	garbageHS, _ := garbageHTTPServer(t)
	floodHS, maxFlood := garbageHTTPServer(t)
	goodCfg := memConfig(ms)
	goodCfg.Timeout = time.Minute // its calls wait for the bad servers' to end
	m := newManager(t, goodCfg, stdioCfg,
		ServerConfig{Name: "badhttp", URL: garbageHS.URL, Timeout: stdioCfg.Timeout},
		ServerConfig{Name: "badflood", URL: floodHS.URL, Timeout: stdioCfg.Timeout})
	wait := findTool(t, toolset(t, m, "mem"), "mcp__mem__wait")
	garbage := []tool.Tool{
		findTool(t, toolset(t, m, "badstdio"), "mcp__badstdio__garbage"),
		findTool(t, toolset(t, m, "badhttp"), "mcp__badhttp__garbage"),
		findTool(t, toolset(t, m, "badflood"), "mcp__badflood__flood"),
	}

	// Calls in flight on the good server...
	const inFlight = 4
	type outcome struct {
		res tool.Result
		err error
	}
	good := make(chan outcome, inFlight)
	for range inFlight {
		go func() {
			res, err := wait.Call(context.Background(), tool.Call{Name: "mcp__mem__wait", Args: json.RawMessage(`{}`)})
			good <- outcome{res, err}
		}()
	}
	for range inFlight {
		<-entered
	}
	// ...while the bad servers, several calls each, emit garbage.
	var wg sync.WaitGroup
	for _, g := range garbage {
		for range 3 {
			wg.Go(func() {
				res, err := g.Call(context.Background(), tool.Call{Name: g.Info().Name, Args: json.RawMessage(`{}`)})
				if err != nil {
					t.Errorf("%s: %v", g.Info().Name, err)
					return
				}
				server, name := res.Metadata["mcp_server"], res.Metadata["mcp_tool"]
				want := []string{fmt.Sprintf("mcp server %s: tool %s:", server, name)}
				if name == "flood" {
					want = append(want, "HTTP response body larger than 16777216 bytes")
				}
				wantError(t, res, want...)
				if strings.Contains(res.Content, "context canceled") {
					t.Errorf("error result %q does not say why the session ended", res.Content)
				}
			})
		}
	}
	wg.Wait()

	close(release)
	for range inFlight {
		o := <-good
		if o.err != nil || o.res.IsError || o.res.Content != "waited" {
			t.Errorf("good server's call = %+v, %v; want \"waited\"", o.res, o.err)
		}
	}
	if st := status(m, "mem"); st.State != StateConnected {
		t.Errorf("good server status = %+v", st)
	}
	if n := ms.dialCount(); n != 1 {
		t.Errorf("good server dialled %d times, want 1 (its session never dropped)", n)
	}
	t.Logf("the server wrote at most %d bytes of one 64 MiB flood before the client stopped reading", maxFlood.Load())
	if n := maxFlood.Load(); n >= 32<<20 {
		t.Errorf("the client read %d bytes of one garbage response, want it to stop soon after 16 MiB", n)
	}
	wantOK(t, call(t, toolset(t, m, "mem"), "mcp__mem__echo", map[string]string{"text": "still"}), "echo: still")
	closeAndCheck(t, m, pids)
}
