package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/internal/slognotice"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentpool/agentpool/tool"
)

// memServer is an in-process go-sdk server reached through
// ServerConfig.Dial over in-memory transports.
type memServer struct {
	srv *sdk.Server

	mu       sync.Mutex
	dials    int
	dialErr  error
	sessions []*sdk.ServerSession
	hanging  chan struct{} // gets a value each time the hang tool is entered
}

func newMemServer(t *testing.T, opts *sdk.ServerOptions) *memServer {
	ms := &memServer{
		srv:     sdk.NewServer(&sdk.Implementation{Name: "mem", Version: "1"}, opts),
		hanging: make(chan struct{}, 16),
	}
	// Registered before the Manager's cleanup, so it runs after it.
	t.Cleanup(ms.killSessions)
	type echoArgs struct {
		Text string `json:"text" jsonschema:"what to echo"`
	}
	sdk.AddTool(ms.srv, &sdk.Tool{
		Name: "echo", Description: "Echoes text.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, Title: "Echo It"},
	}, func(_ context.Context, _ *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	raw := func(name string, h sdk.ToolHandler) {
		ms.srv.AddTool(&sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, h)
	}
	raw("structured", func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{StructuredContent: map[string]any{"a": 1, "b": "x"}}, nil
	})
	raw("fail", func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "it broke"}}}, nil
	})
	raw("rpcerr", func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return nil, errors.New("handler exploded")
	})
	raw("media", func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		size := int64(42)
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "here:"},
			&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
			&sdk.ResourceLink{URI: "file:///a.txt", Name: "a.txt", MIMEType: "text/plain", Size: &size, Description: "a file"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.txt", MIMEType: "text/plain", Text: "hello b"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///c.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
		}}, nil
	})
	raw("hang", func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {
		case ms.hanging <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return ms
}

func (ms *memServer) dial(ctx context.Context) (sdk.Transport, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.dials++
	if ms.dialErr != nil {
		return nil, ms.dialErr
	}
	ct, st := sdk.NewInMemoryTransports()
	ss, err := ms.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	ms.sessions = append(ms.sessions, ss)
	return ct, nil
}

func (ms *memServer) setDialErr(err error) {
	ms.mu.Lock()
	ms.dialErr = err
	ms.mu.Unlock()
}

func (ms *memServer) dialCount() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.dials
}

// killSessions ends every server session (the server "dies").
func (ms *memServer) killSessions() {
	ms.mu.Lock()
	sessions := ms.sessions
	ms.sessions = nil
	ms.mu.Unlock()
	for _, ss := range sessions {
		ss.Close()
		ss.Wait()
	}
}

func memConfig(ms *memServer) ServerConfig {
	return ServerConfig{Name: "mem", Dial: ms.dial, Timeout: 5 * time.Second}
}

func TestListAndCall(t *testing.T) {
	ms := newMemServer(t, &sdk.ServerOptions{PageSize: 2}) // pagination
	m := newManager(t, memConfig(ms))
	if st := status(m, "mem"); st.State != StateNotStarted || st.Transport != TransportCustom {
		t.Fatalf("status before start = %+v", st)
	}
	ts := toolset(t, m, "mem")
	if ts.Name() != "mcp server mem" {
		t.Errorf("Name = %q", ts.Name())
	}
	tools := listAll(t, ts)
	want := []string{"mcp__mem__echo", "mcp__mem__fail", "mcp__mem__hang", "mcp__mem__media", "mcp__mem__rpcerr", "mcp__mem__structured"}
	if got := toolNames(tools); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	echo := findTool(t, ts, "mcp__mem__echo")
	info := echo.Info()
	if info.Kind != tool.KindRead || info.Description != "Echoes text." {
		t.Errorf("echo info = %+v", info)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(info.Parameters, &schema); err != nil || schema.Type != "object" || schema.Properties["text"] == nil {
		t.Errorf("echo schema = %s (%v)", info.Parameters, err)
	}
	if got := tool.Title(echo, tool.Call{}); got != "Echo It" {
		t.Errorf("echo title = %q", got)
	}
	fail := findTool(t, ts, "mcp__mem__fail")
	if got := tool.Title(fail, tool.Call{}); got != "mem: fail" {
		t.Errorf("fail title = %q", got)
	}
	if fail.Info().Kind != tool.KindOther {
		t.Errorf("fail kind = %q", fail.Info().Kind)
	}

	res := call(t, ts, "mcp__mem__echo", map[string]string{"text": "hi"})
	wantOK(t, res, "echo: hi")
	if res.Content != "echo: hi" || res.Metadata["mcp_server"] != "mem" || res.Metadata["mcp_tool"] != "echo" {
		t.Errorf("echo result = %+v", res)
	}
	st := status(m, "mem")
	if st.State != StateConnected || st.Error != "" || fmt.Sprint(st.Tools) != fmt.Sprint(want) {
		t.Errorf("status = %+v", st)
	}
	if ms.dialCount() != 1 {
		t.Errorf("dials = %d, want 1", ms.dialCount())
	}
}

func TestResults(t *testing.T) {
	ms := newMemServer(t, nil)
	ts := toolset(t, newManager(t, memConfig(ms)), "mem")

	res := call(t, ts, "mcp__mem__structured", "{}")
	if res.IsError || res.Content != `{"a":1,"b":"x"}` {
		t.Errorf("structured = %+v", res)
	}
	if res.Metadata["mcp_structured_content"] == nil {
		t.Errorf("structured metadata = %v", res.Metadata)
	}

	res = call(t, ts, "mcp__mem__fail", "")
	if !res.IsError || res.Content != "it broke" {
		t.Errorf("fail = %+v", res)
	}

	res = call(t, ts, "mcp__mem__media", nil)
	want := strings.Join([]string{
		"here:",
		"[image image/png, 1234 bytes]",
		"[audio audio/wav, 10 bytes]",
		"[resource link file:///a.txt (a.txt, text/plain, 42 bytes)] a file",
		"[resource file:///b.txt (text/plain)]\nhello b",
		"[resource file:///c.bin (application/octet-stream), 3 bytes]",
	}, "\n")
	if res.IsError || res.Content != want {
		t.Errorf("media = %q, want %q", res.Content, want)
	}

	// A handler error comes back as a JSON-RPC error: an error result,
	// and the server is not restarted for it.
	wantError(t, call(t, ts, "mcp__mem__rpcerr", "{}"), "mcp server mem: tool rpcerr:", "handler exploded")

	wantError(t, call(t, ts, "mcp__mem__echo", "[1,2]"), "arguments must be a JSON object")
	wantError(t, call(t, ts, "mcp__mem__echo", "{bad"), "arguments must be a JSON object")

	// A tool the server dropped (without telling): the server's error.
	echo := findTool(t, ts, "mcp__mem__echo")
	ms.srv.RemoveTools("echo")
	res, err := echo.Call(context.Background(), tool.Call{Name: "mcp__mem__echo", Args: json.RawMessage(`{"text":"x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res, "mcp server mem: tool echo:", "unknown tool")
	if ms.dialCount() != 1 {
		t.Errorf("dials = %d, want 1 (no restart for server errors)", ms.dialCount())
	}
}

func TestListChanged(t *testing.T) {
	ms := newMemServer(t, nil)
	changed := make(chan struct{}, 4)
	log := slog.New(slognotice.New("mcp: server says its tools changed", changed))
	m, err := NewManager([]ServerConfig{memConfig(ms)}, Options{StartTimeout: 20 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ts := toolset(t, m, "mem")
	listAll(t, ts)

	// After the client got the server's notice, the next list is fresh.
	waitFor := func(name string, present bool) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatal("no tools/list_changed notice")
		}
		names := toolNames(listAll(t, ts))
		found := false
		for _, n := range names {
			found = found || n == name
		}
		if found != present {
			t.Fatalf("tools = %v: %s present = %v, want %v", names, name, found, present)
		}
	}
	ms.srv.AddTool(&sdk.Tool{Name: "added.tool", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "new"}}}, nil
		})
	waitFor("mcp__mem__added_tool", true) // '.' sanitised
	res := call(t, ts, "mcp__mem__added_tool", "{}")
	wantOK(t, res, "new")
	if res.Metadata["mcp_tool"] != "added.tool" {
		t.Errorf("metadata = %v", res.Metadata)
	}
	ms.srv.RemoveTools("added.tool")
	waitFor("mcp__mem__added_tool", false)
	if ms.dialCount() != 1 {
		t.Errorf("dials = %d, want 1", ms.dialCount())
	}
}

func TestCallTimeout(t *testing.T) {
	ms := newMemServer(t, nil)
	cfg := memConfig(ms)
	cfg.Timeout = 200 * time.Millisecond
	ts := toolset(t, newManager(t, cfg), "mem")
	start := time.Now()
	res := call(t, ts, "mcp__mem__hang", "{}")
	wantError(t, res, "mcp server mem: tool hang timed out after 200ms")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %s", d)
	}
	wantOK(t, call(t, ts, "mcp__mem__echo", map[string]string{"text": "still"}), "echo: still")
	if ms.dialCount() != 1 {
		t.Errorf("dials = %d, want 1 (a timeout does not restart)", ms.dialCount())
	}
}

func TestCallerCancel(t *testing.T) {
	ms := newMemServer(t, nil)
	ts := toolset(t, newManager(t, memConfig(ms)), "mem")
	hang := findTool(t, ts, "mcp__mem__hang")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := hang.Call(ctx, tool.Call{Name: "mcp__mem__hang"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the caller's deadline", err)
	}
}

func TestConcurrency(t *testing.T) {
	ms := newMemServer(t, nil)
	ts := toolset(t, newManager(t, memConfig(ms)), "mem")
	const workers, calls = 32, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := range workers {
		wg.Go(func() {
			tools, err := ts.Tools(context.Background()) // concurrent first start
			if err != nil {
				errs <- err
				return
			}
			var echo tool.Tool
			for _, tl := range tools {
				if tl.Info().Name == "mcp__mem__echo" {
					echo = tl
				}
			}
			for i := range calls {
				text := fmt.Sprintf("w%d-%d", w, i)
				res, err := echo.Call(context.Background(), tool.Call{Args: json.RawMessage(`{"text":"` + text + `"}`)})
				if err != nil || res.IsError || res.Content != "echo: "+text {
					errs <- fmt.Errorf("call %s: %+v, %v", text, res, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ms.dialCount() != 1 {
		t.Errorf("dials = %d, want 1 (one shared start)", ms.dialCount())
	}
}

func TestRestartAfterServerDeath(t *testing.T) {
	ms := newMemServer(t, nil)
	m := newManager(t, memConfig(ms))
	ts := toolset(t, m, "mem")
	wantOK(t, call(t, ts, "mcp__mem__echo", map[string]string{"text": "1"}), "echo: 1")

	ms.killSessions()
	wantOK(t, call(t, ts, "mcp__mem__echo", map[string]string{"text": "2"}), "echo: 2")
	if ms.dialCount() != 2 {
		t.Errorf("dials = %d, want 2", ms.dialCount())
	}

	// Dead and unable to restart: an error result, the server is failed,
	// and a later call starts it again.
	echo := findTool(t, ts, "mcp__mem__echo")
	ms.setDialErr(errors.New("no route to server"))
	ms.killSessions()
	wantError(t, mustCall(t, echo, `{"text":"3"}`), "mcp server mem:", "no route to server")
	if st := status(m, "mem"); st.State != StateFailed || !strings.Contains(st.Error, "no route to server") {
		t.Errorf("status = %+v", st)
	}
	ms.setDialErr(nil)
	wantOK(t, mustCall(t, echo, `{"text":"4"}`), "echo: 4")
	if st := status(m, "mem"); st.State != StateConnected {
		t.Errorf("status = %+v", st)
	}
}

func TestStartFailureRetried(t *testing.T) {
	ms := newMemServer(t, nil)
	ms.setDialErr(errors.New("not yet"))
	m := newManager(t, memConfig(ms))
	ts := toolset(t, m, "mem")
	if _, err := ts.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), "mcp server mem: start: not yet") {
		t.Fatalf("Tools err = %v", err)
	}
	if st := status(m, "mem"); st.State != StateFailed || !strings.Contains(st.Error, "not yet") {
		t.Errorf("status = %+v", st)
	}
	ms.setDialErr(nil)
	if got := len(listAll(t, ts)); got != 6 {
		t.Errorf("tools = %d, want 6", got)
	}
}

func TestStartTimeout(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	cfg := ServerConfig{Name: "slow", Dial: func(ctx context.Context) (sdk.Transport, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-block:
			return nil, errors.New("unblocked")
		}
	}}
	m, err := NewManager([]ServerConfig{cfg}, Options{StartTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ts, _ := m.Toolset("slow")
	_, err = ts.Tools(context.Background())
	if err == nil || !strings.Contains(err.Error(), "mcp server slow: start: timed out after 100ms") {
		t.Fatalf("Tools err = %v", err)
	}
}

func TestClose(t *testing.T) {
	ms := newMemServer(t, nil)
	cfg := memConfig(ms)
	cfg.Timeout = time.Minute
	m := newManager(t, cfg)
	ts := toolset(t, m, "mem")
	hang := findTool(t, ts, "mcp__mem__hang")
	done := make(chan tool.Result)
	go func() {
		res, _ := hang.Call(context.Background(), tool.Call{Name: "mcp__mem__hang"})
		done <- res
	}()
	<-ms.hanging // the call reached the server
	start := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s", d)
	}
	select {
	case res := <-done:
		wantError(t, res, "mcp server mem: closed")
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight call did not end on Close")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Tools(context.Background()); err == nil {
		t.Fatal("Tools after Close succeeded")
	}
	wantError(t, mustCall(t, hang, "{}"), "mcp server mem: closed")
	if st := status(m, "mem"); st.State != StateClosed {
		t.Errorf("status = %+v", st)
	}
}

func mustCall(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	res, err := tl.Call(context.Background(), tool.Call{Name: tl.Info().Name, Args: json.RawMessage(args)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestNewManagerValidation(t *testing.T) {
	cases := []struct {
		name    string
		servers []ServerConfig
		err     string // "" = valid
	}{
		{"stdio", []ServerConfig{{Name: "a", Command: "x"}}, ""},
		{"http default", []ServerConfig{{Name: "a", URL: "http://127.0.0.1:1/mcp"}}, ""},
		{"sse", []ServerConfig{{Name: "a-b_1", Transport: "sse", URL: "http://127.0.0.1:1/sse"}}, ""},
		{"http alias", []ServerConfig{{Name: "a", Transport: "http", URL: "http://127.0.0.1:1/mcp"}}, ""},
		{"empty name", []ServerConfig{{Command: "x"}}, "name is empty"},
		{"bad name", []ServerConfig{{Name: "a.b", Command: "x"}}, "must match"},
		{"duplicate", []ServerConfig{{Name: "a", Command: "x"}, {Name: "a", Command: "y"}}, "duplicate name"},
		{"nothing", []ServerConfig{{Name: "a"}}, "neither command nor url"},
		{"unknown transport", []ServerConfig{{Name: "a", Transport: "ws", URL: "ws://x"}}, "unknown transport"},
		{"stdio without command", []ServerConfig{{Name: "a", Transport: "stdio", URL: "http://x"}}, "without a command"},
		{"sse without url", []ServerConfig{{Name: "a", Transport: "sse", Command: "x"}}, "without a url"},
		{"negative timeout", []ServerConfig{{Name: "a", Command: "x", Timeout: -1}}, "negative timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewManager(tc.servers, Options{})
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				m.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
	m, err := NewManager([]ServerConfig{{Name: "a", URL: "http://127.0.0.1:1/mcp"}, {Name: "b", Command: "x"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st := m.Servers()
	if len(st) != 2 || st[0].Transport != TransportStreamableHTTP || st[1].Transport != TransportStdio || st[0].State != StateNotStarted {
		t.Errorf("Servers = %+v", st)
	}
	if ts := m.Toolsets(); len(ts) != 2 || ts[0].Name() != "mcp server a" || ts[1].Name() != "mcp server b" {
		t.Errorf("Toolsets = %v", ts)
	}
	if _, ok := m.Toolset("c"); ok {
		t.Error("Toolset(c) found")
	}
}

func TestInputSchema(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{nil, `{"type":"object","properties":{}}`},
		{"nonsense", `{"type":"object","properties":{}}`},
		{map[string]any{}, `{"properties":{},"type":"object"}`},
		{map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}, `{"properties":{"a":{"type":"string"}},"type":"object"}`},
	}
	for _, tc := range cases {
		if got := string(inputSchema(tc.in)); got != tc.want {
			t.Errorf("inputSchema(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestToolName(t *testing.T) {
	if got := ToolName("git", "status"); got != "mcp__git__status" {
		t.Error(got)
	}
	if got := ToolName("fs", "read.file/v2"); got != "mcp__fs__read_file_v2" {
		t.Error(got)
	}
}

func TestUnreachableHTTPServer(t *testing.T) {
	// Nothing listens on port 1 of loopback: a start error, no hang.
	m := newManager(t, ServerConfig{Name: "web", URL: "http://127.0.0.1:1/mcp"}, ServerConfig{Name: "old", Transport: "sse", URL: "http://127.0.0.1:1/sse"})
	for _, name := range []string{"web", "old"} {
		ts, _ := m.Toolset(name)
		if _, err := ts.Tools(context.Background()); err == nil || !strings.Contains(err.Error(), "mcp server "+name+": start:") {
			t.Errorf("%s: Tools err = %v", name, err)
		}
	}
}
