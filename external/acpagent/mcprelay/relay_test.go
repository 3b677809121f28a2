package mcprelay_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/external/acpagent/mcprelay"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is a streamable HTTP MCP server on loopback with one tool,
// echo, which answers its text (JSON answers, or event streams).
func server(t *testing.T, jsonResponse, stateless bool) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse, Stateless: stateless})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// start runs the relay to url over pipes; the returned function closes
// its stdin and waits for Run's error.
func start(t *testing.T, url string) (stdin io.WriteCloser, stdout io.ReadCloser, stop func() error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := mcprelay.Run(context.Background(), mcprelay.Options{URL: url, Stdin: inR, Stdout: outW})
		outW.Close()
		done <- err
	}()
	return inW, outR, func() error {
		inW.Close()
		err := <-done
		outR.Close()
		return err
	}
}

// An MCP client over the relay's stdio lists and calls the tools of the
// HTTP server, whichever way the server answers (JSON or an event
// stream, stateless or with a session).
func TestClientThroughTheRelay(t *testing.T) {
	for _, c := range []struct {
		name            string
		json, stateless bool
	}{{"json stateless", true, true}, {"events stateful", false, false}} {
		t.Run(c.name, func(t *testing.T) {
			ts := server(t, c.json, c.stateless)
			in, out, stop := start(t, ts.URL)
			ctx := context.Background()
			cl := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
			cs, err := cl.Connect(ctx, &mcp.IOTransport{Reader: out, Writer: in}, nil)
			if err != nil {
				t.Fatal(err)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" {
				t.Fatalf("tools %+v, %v", tools, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "echo: hi" {
				t.Fatalf("call %+v, %v", res, err)
			}
			cs.Close()
			if err := stop(); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

// A request the server refuses (an ended delegation's path: 404), a
// message over the bound and a line that is not JSON each get an error
// answer (with the request's id when there is one); the relay goes on.
func TestRelayAnswersFailures(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such MCP endpoint", http.StatusNotFound)
	}))
	defer ts.Close()
	in, out, stop := start(t, ts.URL+"/mcp/gone")
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 1<<20)
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no answer: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("answer %q: %v", lines.Text(), err)
		}
		return m
	}
	go io.WriteString(in, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`+"\n")
	if m := next(); m["id"] != 7.0 || !strings.Contains(m["error"].(map[string]any)["message"].(string), "404") {
		t.Errorf("answer to a refused request %v", m)
	}
	go io.WriteString(in, `{"jsonrpc":"2.0","id":8,"method":"x","params":{"p":"`+strings.Repeat("x", mcprelay.MaxMessage)+`"}}`+"\n")
	if m := next(); m["id"] != nil || !strings.Contains(m["error"].(map[string]any)["message"].(string), "over") {
		t.Errorf("answer to a message over the bound %v", m)
	}
	go io.WriteString(in, "not json\n")
	if m := next(); m["error"] == nil {
		t.Errorf("answer to a line that is not JSON %v", m)
	}
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestOnlyLoopback(t *testing.T) {
	for _, u := range []string{"http://example.com/mcp", "https://127.0.0.1/mcp", "http://10.0.0.1:80/", "http://user:pw@127.0.0.1/", "::"} {
		if err := mcprelay.Run(context.Background(), mcprelay.Options{URL: u, Stdin: strings.NewReader("")}); err == nil {
			t.Errorf("%s was accepted", u)
		}
	}
	for _, u := range []string{"http://127.0.0.1:9/mcp/x", "http://[::1]:9/", "http://localhost:9/"} {
		if err := mcprelay.Check(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}
