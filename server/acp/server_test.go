package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
)

func TestMain(m *testing.M) {
	if os.Getenv(mcpHelperEnv) != "" {
		os.Exit(runMCPHelper()) // the test binary as an MCP server (mcp_test.go)
	}
	goleak.VerifyTestMain(m)
}

// nestedYAML: lead --task--> team (parallel: searcher --ask_summarizer-->
// summarizer, critic), so children and a grandchild.
const nestedYAML = `
default_agent: lead
agents:
  lead:
    description: Delegates.
    model:
      type: test
      call_tools: [task]
      tool_args:
        task: {agent_or_team: team, prompt: "Collect facts.", description: "Research"}
      custom_output_text: "Plan complete."
    tools: [subagent]
  searcher:
    model:
      type: test
      call_tools: [ask_summarizer]
      tool_args:
        ask_summarizer: {prompt: "Summarize."}
      custom_output_text: "Search finished."
    workers: [summarizer]
  summarizer:
    model: {type: test, custom_output_text: "Summary: fine."}
  critic:
    description: Criticises.
    model: {type: test, custom_output_text: "Looks risky."}
  turns:
    model:
      type: scripted
      turns:
        - tool_calls:
            - {name: list_available_nodes, args: {}}
        - text: never reached
    tools: [subagent]
    max_turns: 1
teams:
  team:
    mode: parallel
    members: [searcher, critic]
`

// slowYAML: a child that streams slowly (for cancellation), and a failing
// child next to a working one.
const slowYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: test
      call_tools: [task]
      tool_args:
        task: {agent_or_team: slow, prompt: "Take your time.", description: "Slow work"}
      custom_output_text: "Done."
    tools: [subagent]
  slow:
    model:
      type: scripted
      delay: 40ms
      turns:
        - text: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"
  mixed:
    model:
      type: scripted
      turns:
        - tool_calls:
            - {name: task, args: {agent_or_team: helper, prompt: "Help.", description: "Helping"}}
            - {name: task, args: {agent_or_team: broken, prompt: "Fail.", description: "Failing"}}
        - text: "All done."
    tools: [subagent]
  helper:
    model: {type: test, custom_output_text: "Helped."}
  broken:
    model:
      type: scripted
      turns:
        - error: upstream failed
`

// wire is any message the server writes.
type wire struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
	line   string
}

// harness runs a Server over io.Pipe and plays the client.
type harness struct {
	t       *testing.T
	srv     *Server
	in      *io.PipeWriter
	msgs    chan wire
	done    chan error
	nextID  int
	closed  bool
	timeout time.Duration // of next; 10s when 0
	mu      sync.Mutex
}

func startServer(t *testing.T, p *pool.Pool, opts Options) *harness {
	t.Helper()
	opts.Pool = p
	if opts.ProgressInterval == 0 {
		opts.ProgressInterval = -1
	}
	if os.Getenv("ACP_TEST_LOG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &harness{t: t, srv: srv, in: inW, msgs: make(chan wire, 1<<16), done: make(chan error, 1)}
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		outW.Close()
		inR.Close()
		h.done <- err
	}()
	go func() {
		defer close(h.msgs)
		br := bufio.NewReaderSize(outR, 1<<20)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				var w wire
				if jerr := json.Unmarshal([]byte(line), &w); jerr != nil {
					t.Errorf("server wrote invalid JSON %q: %v", line, jerr)
				}
				if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
					t.Errorf("server message not one line: %q", line)
				}
				w.line = line
				h.msgs <- w
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(h.close)
	return h
}

// close ends the input and waits for Serve to return.
func (h *harness) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.mu.Unlock()
	h.in.Close()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Fatal("Serve did not return after the input ended")
	}
	for range h.msgs {
	}
}

func (h *harness) writeLine(s string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, s+"\n"); err != nil {
		h.t.Fatalf("write: %v", err)
	}
}

func (h *harness) send(v any) {
	h.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	h.writeLine(string(b))
}

func (h *harness) next() wire {
	h.t.Helper()
	timeout := h.timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	select {
	case w, ok := <-h.msgs:
		if !ok {
			h.t.Fatal("server output ended")
		}
		return w
	case <-time.After(timeout):
		h.t.Fatalf("no message from the server within %s", timeout)
	}
	return wire{}
}

// request sends a request and returns its id.
func (h *harness) request(method string, params any) string {
	h.t.Helper()
	h.nextID++
	msg := map[string]any{"jsonrpc": "2.0", "id": h.nextID, "method": method}
	if params != nil {
		msg["params"] = params
	}
	h.send(msg)
	return fmt.Sprint(h.nextID)
}

// wait reads until the response with id, returning it and the
// notifications before it. onRequest answers requests from the server.
func (h *harness) wait(id string, onRequest func(wire) any) (wire, []note) {
	h.t.Helper()
	var notes []note
	for {
		w := h.next()
		switch {
		case w.Method == methodSessionUpdate:
			var n note
			if err := json.Unmarshal(w.Params, &n); err != nil {
				h.t.Fatalf("bad session/update %s: %v", w.line, err)
			}
			notes = append(notes, n)
		case w.Method != "":
			if onRequest == nil {
				h.t.Fatalf("unexpected request from the server: %s", w.line)
			}
			h.send(map[string]any{"jsonrpc": "2.0", "id": w.ID, "result": onRequest(w)})
		case string(w.ID) == id:
			return w, notes
		default:
			h.t.Fatalf("unexpected message while waiting for %s: %s", id, w.line)
		}
	}
}

func (h *harness) call(method string, params any) (wire, []note) {
	h.t.Helper()
	return h.wait(h.request(method, params), nil)
}

func (h *harness) mustCall(method string, params any, result any) []note {
	h.t.Helper()
	w, notes := h.call(method, params)
	if w.Error != nil {
		h.t.Fatalf("%s: error %d %s", method, w.Error.Code, w.Error.Message)
	}
	if result != nil {
		if err := json.Unmarshal(w.Result, result); err != nil {
			h.t.Fatalf("%s result %s: %v", method, w.Result, err)
		}
	}
	return notes
}

// initialize announces the spawn tool calls (viewTree), and with
// subagents the unstable subagents capability (viewSubagents);
// initializeFlat announces neither.
func (h *harness) initialize(subagents bool) {
	h.t.Helper()
	caps := map[string]any{"_meta": map[string]any{"agentpool": map[string]any{"spawn_tool_calls": true}}}
	if subagents {
		caps["subagents"] = map[string]any{}
	}
	h.mustCall("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps, "clientInfo": map[string]any{"name": "test", "version": "1"}}, nil)
}

func (h *harness) initializeFlat() {
	h.t.Helper()
	h.mustCall("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}, "clientInfo": map[string]any{"name": "test", "version": "1"}}, nil)
}

func (h *harness) newSession() string {
	h.t.Helper()
	var res struct {
		SessionID string    `json:"sessionId"`
		Modes     modeState `json:"modes"`
	}
	h.mustCall("session/new", map[string]any{"cwd": "/work", "mcpServers": []any{}}, &res)
	if res.SessionID == "" {
		h.t.Fatal("session/new: no sessionId")
	}
	return res.SessionID
}

func promptParams(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

func stopReason(t *testing.T, w wire) string {
	t.Helper()
	if w.Error != nil {
		t.Fatalf("prompt failed: %d %s", w.Error.Code, w.Error.Message)
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(w.Result, &r); err != nil {
		t.Fatal(err)
	}
	return r.StopReason
}

func TestInitialize(t *testing.T) {
	h := startServer(t, servertest.Pool(t, nestedYAML), Options{Version: "1.2.3"})
	var res struct {
		ProtocolVersion   int `json:"protocolVersion"`
		AgentCapabilities struct {
			LoadSession        bool            `json:"loadSession"`
			PromptCapabilities map[string]bool `json:"promptCapabilities"`
			MCPCapabilities    map[string]bool `json:"mcpCapabilities"`
			SessionCaps        map[string]any  `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
		AuthMethods []any          `json:"authMethods"`
		AgentInfo   implementation `json:"agentInfo"`
	}
	h.mustCall("initialize", map[string]any{"protocolVersion": 1}, &res)
	ac := res.AgentCapabilities
	if res.ProtocolVersion != 1 || !ac.LoadSession || ac.SessionCaps["list"] == nil || ac.SessionCaps["close"] == nil || !ac.MCPCapabilities["http"] || !ac.MCPCapabilities["sse"] ||
		ac.PromptCapabilities["image"] || ac.PromptCapabilities["audio"] || res.AuthMethods == nil || len(res.AuthMethods) != 0 ||
		res.AgentInfo.Version != "1.2.3" {
		t.Errorf("initialize result %+v", res)
	}
	h.mustCall("authenticate", map[string]any{"methodId": "none"}, nil)
}

func TestMalformedInput(t *testing.T) {
	h := startServer(t, servertest.Pool(t, nestedYAML), Options{MaxLineBytes: 4096})
	expectErr := func(id string, code int) {
		t.Helper()
		w := h.next()
		if w.Error == nil || w.Error.Code != code || string(w.ID) != id {
			t.Fatalf("got %s, want error %d with id %s", w.line, code, id)
		}
		if w.Result != nil {
			t.Fatalf("error response with a result: %s", w.line)
		}
	}
	h.writeLine("")
	h.writeLine("   ")
	h.writeLine(`{"jsonrpc":"2.0","id":1,"method":`)
	expectErr("null", codeParseError)
	h.writeLine(`not json at all`)
	expectErr("null", codeParseError)
	h.writeLine(`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]`)
	expectErr("null", codeInvalidRequest)
	h.writeLine(`[]`)
	expectErr("null", codeInvalidRequest)
	h.writeLine(`42`)
	expectErr("null", codeInvalidRequest)
	h.writeLine(`{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}`)
	expectErr("null", codeInvalidRequest)
	h.writeLine(`{"jsonrpc":"1.0","id":7,"method":"initialize"}`)
	expectErr("7", codeInvalidRequest)
	h.writeLine(`{"jsonrpc":"2.0","id":8}`)
	expectErr("8", codeInvalidRequest)
	h.writeLine(`{"jsonrpc":"2.0","id":"s9","method":"no/such"}`)
	expectErr(`"s9"`, codeMethodNotFound)
	h.writeLine(`{"jsonrpc":"2.0","id":null,"method":"no/such"}`)
	expectErr("null", codeMethodNotFound)
	h.writeLine(`{"jsonrpc":"2.0","method":"no/such/notification"}`) // ignored
	h.writeLine(`{"jsonrpc":"2.0","id":999,"result":{}}`)            // response to nothing: ignored
	h.writeLine(`{"jsonrpc":"2.0","id":10,"method":"session/prompt"}`)
	expectErr("10", codeInvalidParams)
	h.writeLine(`{"jsonrpc":"2.0","id":11,"method":"session/prompt","params":{"sessionId":"x","prompt":"hi"}}`)
	expectErr("11", codeInvalidParams)
	h.writeLine(`{"jsonrpc":"2.0","id":12,"method":"initialize","params":{}}`)
	expectErr("12", codeInvalidParams)
	h.writeLine(`{"jsonrpc":"2.0","id":13,"method":"session/new","params":[1]}`)
	expectErr("13", codeInvalidParams)
	h.writeLine(`{"jsonrpc":"2.0","id":14,"method":"session/new","params":{"mcpServers":[]}}`)
	expectErr("14", codeInvalidParams)
	h.writeLine(`{"jsonrpc":"2.0","id":15,"method":"session/prompt","params":{"sessionId":"ses_nope","prompt":[]}}`)
	expectErr("15", codeResourceNotFound)
	h.writeLine(`{"jsonrpc":"2.0","id":16,"method":"session/load","params":{"sessionId":"ses_nope","cwd":"/","mcpServers":[]}}`)
	expectErr("16", codeResourceNotFound)
	h.writeLine(`{"jsonrpc":"2.0","id":17,"method":"session/prompt","params":{"sessionId":"x","prompt":[{"type":"image","data":"","mimeType":"image/png"}]}}`)
	expectErr("17", codeInvalidParams)
	// Too long: rejected, then the server keeps serving.
	h.writeLine(`{"jsonrpc":"2.0","id":18,"method":"initialize","params":{"protocolVersion":1,"_meta":{"pad":"` + strings.Repeat("x", 5000) + `"}}}`)
	expectErr("null", codeInvalidRequest)
	h.writeLine(`{"jsonrpc":"2.0","id":19,"method":"initialize","params":{"protocolVersion":1,"_meta":{"pad":"` + strings.Repeat("x", 3000) + `"}}}`)
	if w := h.next(); string(w.ID) != "19" || w.Error != nil {
		t.Fatalf("after a too long line: %s", w.line)
	}
	// CRLF line endings are accepted.
	h.writeLine(`{"jsonrpc":"2.0","id":20,"method":"authenticate","params":{"methodId":"x"}}` + "\r")
	if w := h.next(); string(w.ID) != "20" || w.Error != nil {
		t.Fatalf("CRLF line: %s", w.line)
	}
}

func TestLineLimit32MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	h := startServer(t, servertest.Pool(t, nestedYAML), Options{})
	h.timeout = 2 * time.Minute // the race detector makes 32 MiB of JSON slow
	// An unknown method: the answer (-32601 with the id) shows that the
	// whole line was read and parsed.
	head := `{"jsonrpc":"2.0","id":1,"method":"big/thing","params":{"pad":"`
	tail := `"}}`
	line := func(n int) []byte {
		b := make([]byte, 0, n+1)
		b = append(b, head...)
		b = append(b, bytes.Repeat([]byte("x"), n-len(head)-len(tail))...)
		return append(append(b, tail...), '\n')
	}
	if _, err := h.in.Write(line(DefaultMaxLineBytes)); err != nil { // exactly 32 MiB
		t.Fatal(err)
	}
	if w := h.next(); string(w.ID) != "1" || w.Error == nil || w.Error.Code != codeMethodNotFound {
		t.Fatalf("32 MiB line: %.200s", w.line)
	}
	if _, err := h.in.Write(line(DefaultMaxLineBytes + 1)); err != nil {
		t.Fatal(err)
	}
	if w := h.next(); w.Error == nil || w.Error.Code != codeInvalidRequest || string(w.ID) != "null" {
		t.Fatalf("32 MiB + 1 line: %.200s", w.line)
	}
	h.mustCall("initialize", map[string]any{"protocolVersion": 1}, nil)
}

func TestPromptNested(t *testing.T) {
	for _, subagents := range []bool{false, true} {
		t.Run(fmt.Sprintf("subagents=%v", subagents), func(t *testing.T) {
			p := servertest.Pool(t, nestedYAML)
			h := startServer(t, p, Options{})
			h.initialize(subagents)
			sid := h.newSession()
			w, notes := h.call("session/prompt", promptParams(sid, "Plan the research"))
			if got := stopReason(t, w); got != stopEndTurn {
				t.Fatalf("stopReason %q", got)
			}
			closed := checkUpdates(t, sid, notes, subagents)
			// team, searcher, critic, summarizer
			if len(closed) != 4 {
				t.Errorf("%d spawn tool calls, want 4: %v", len(closed), closed)
			}
			for child, st := range closed {
				if st != statusCompleted {
					t.Errorf("spawn %s ended %s", child, st)
				}
			}
			var text strings.Builder
			for _, n := range notes {
				if n.SessionID == sid && n.Update.SessionUpdate == updateAgentMessageChunk {
					var c contentBlock
					_ = json.Unmarshal(n.Update.Content, &c)
					text.WriteString(c.Text)
				}
			}
			if text.String() != "Plan complete." {
				t.Errorf("agent text %q", text.String())
			}
			if subagents {
				childUpdates := 0
				for _, n := range notes {
					if n.SessionID != sid {
						childUpdates++
					}
				}
				if childUpdates == 0 {
					t.Error("no child-session updates for a subagents client")
				}
			}
		})
	}
}

func TestPromptFailingChildAndModes(t *testing.T) {
	p := servertest.Pool(t, slowYAML)
	h := startServer(t, p, Options{Agent: "mixed"})
	h.initialize(false)
	sid := h.newSession()
	w, notes := h.call("session/prompt", promptParams(sid, "go"))
	if got := stopReason(t, w); got != stopEndTurn {
		t.Fatalf("stopReason %q", got)
	}
	closed := checkUpdates(t, sid, notes, false)
	var completed, failed int
	for _, st := range closed {
		switch st {
		case statusCompleted:
			completed++
		case statusFailed:
			failed++
		}
	}
	if completed != 1 || failed != 1 {
		t.Errorf("spawns closed %v, want one completed and one failed", closed)
	}

	// Switch the mode: the next prompt runs the other agent.
	h.mustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "helper"}, nil)
	w, notes = h.call("session/prompt", promptParams(sid, "again"))
	if got := stopReason(t, w); got != stopEndTurn {
		t.Fatalf("stopReason %q", got)
	}
	if len(notes) == 0 || !strings.Contains(string(notes[len(notes)-1].Update.Content), "Helped.") {
		t.Errorf("helper did not answer: %+v", notes)
	}
	if w, _ := h.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "nobody"}); w.Error == nil || w.Error.Code != codeInvalidParams {
		t.Errorf("unknown mode: %s", w.line)
	}
	if s, err := p.Store().GetSession(context.Background(), sid); err != nil || s.AgentName != "helper" {
		t.Errorf("stored session %+v, %v", s, err)
	}
}

func TestPromptMaxTurns(t *testing.T) {
	h := startServer(t, servertest.Pool(t, nestedYAML), Options{Agent: "turns"})
	h.initialize(false)
	sid := h.newSession()
	w, notes := h.call("session/prompt", promptParams(sid, "loop"))
	if got := stopReason(t, w); got != stopMaxTurnRequests {
		t.Fatalf("stopReason %q", got)
	}
	checkUpdates(t, sid, notes, false)
}

func TestCancel(t *testing.T) {
	p := servertest.Pool(t, slowYAML)
	h := startServer(t, p, Options{})
	h.initialize(true)
	sid := h.newSession()
	id := h.request("session/prompt", promptParams(sid, "slowly"))
	var notes []note
	var child string
	for child == "" {
		w := h.next()
		if w.Method != methodSessionUpdate {
			t.Fatalf("unexpected %s", w.line)
		}
		var n note
		_ = json.Unmarshal(w.Params, &n)
		notes = append(notes, n)
		// Wait for the child's first own content, then cancel.
		if n.SessionID != sid && n.Update.SessionUpdate == updateAgentMessageChunk {
			child = n.SessionID
		}
	}
	// A second prompt while the first runs is the client's mistake:
	// Invalid Request (-32600), not an internal error.
	busyID := h.request("session/prompt", promptParams(sid, "again"))
	for {
		w := h.next()
		if string(w.ID) == busyID {
			if w.Error == nil || w.Error.Code != codeInvalidRequest || !strings.Contains(w.Error.Message, "session/cancel") {
				t.Fatalf("second prompt on a busy session: %s", w.line)
			}
			break
		}
		var n note
		_ = json.Unmarshal(w.Params, &n)
		notes = append(notes, n)
	}
	h.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
	w, rest := h.wait(id, nil)
	notes = append(notes, rest...)
	if got := stopReason(t, w); got != stopCancelled {
		t.Fatalf("stopReason %q", got)
	}
	closed := checkUpdates(t, sid, notes, true)
	if closed[child] != statusFailed {
		t.Errorf("cancelled child's spawn tool call closed %q", closed[child])
	}
	tree, err := session.Subtree(context.Background(), p.Store(), sid)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tree {
		if s.Status != session.StatusAborted {
			t.Errorf("session %s (%s) is %s, want aborted", s.ID, s.AgentName, s.Status)
		}
	}
	if len(tree) != 2 {
		t.Errorf("%d sessions in the tree, want 2", len(tree))
	}
	// The session is usable again.
	h.mustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "helper"}, nil)
	w, _ = h.call("session/prompt", promptParams(sid, "quick"))
	if got := stopReason(t, w); got != stopEndTurn {
		t.Fatalf("after cancel: stopReason %q", got)
	}
}

func TestEOFCancelsRunningPrompts(t *testing.T) {
	p := servertest.Pool(t, slowYAML)
	h := startServer(t, p, Options{})
	h.initialize(false)
	sid := h.newSession()
	h.request("session/prompt", promptParams(sid, "slowly"))
	for {
		w := h.next()
		var n note
		_ = json.Unmarshal(w.Params, &n)
		if strings.HasPrefix(n.Update.ToolCallID, spawnToolCallPrefix) {
			break
		}
	}
	start := time.Now()
	h.close() // waits for Serve: the prompt must be cancelled and waited for
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Serve took %s to return after EOF", d)
	}
	s, err := p.Store().GetSession(context.Background(), sid)
	if err != nil || s.Status != session.StatusAborted {
		t.Errorf("session after EOF: %s, %v", s.Status, err)
	}
}

func TestContextCancelEndsServe(t *testing.T) {
	p := servertest.Pool(t, slowYAML)
	srv, err := New(Options{Pool: p})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out syncBuffer
	go func() { done <- srv.Serve(ctx, inR, &out) }()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/"}}`+"\n")
	var sid string
	out.waitFor(t, 10*time.Second, func(s string) bool {
		var r struct {
			Result struct {
				SessionID string `json:"sessionId"`
			} `json:"result"`
		}
		if line, _, ok := strings.Cut(s, "\n"); ok {
			_ = json.Unmarshal([]byte(line), &r)
			sid = r.Result.SessionID
		}
		return sid != ""
	})
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"x"}]}}`+"\n")
	// No initialize: the flat view, the child shown in the task call.
	out.waitFor(t, 10*time.Second, func(s string) bool { return strings.Contains(s, `"child_session_id"`) })
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("Serve: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return on ctx")
	}
	if !strings.Contains(out.String(), `"id":2,"result":{"stopReason":"cancelled"`) {
		t.Errorf("the running prompt was not answered cancelled:\n%s", out.String())
	}
	inW.Close() // releases the reader goroutine
}

// syncBuffer is a Serve output tests can read while it is written;
// waitFor waits on its notice of each write.
type syncBuffer struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{} // a token once written since it was last taken
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	n, err := s.b.Write(p)
	if s.wrote == nil {
		s.wrote = make(chan struct{}, 1)
	}
	wrote := s.wrote
	s.mu.Unlock()
	select {
	case wrote <- struct{}{}:
	default:
	}
	return n, err
}

// waitFor returns once cond holds for what was written, looking again
// after each write; it fails the test after d.
func (s *syncBuffer) waitFor(t *testing.T, d time.Duration, cond func(string) bool) string {
	t.Helper()
	s.mu.Lock()
	if s.wrote == nil {
		s.wrote = make(chan struct{}, 1)
	}
	wrote := s.wrote
	s.mu.Unlock()
	timeout := time.After(d)
	for {
		if out := s.String(); cond(out) {
			return out
		}
		select {
		case <-wrote:
		case <-timeout:
			t.Fatalf("output did not come in %s: %q", d, s.String())
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLoadReplaysHistory(t *testing.T) {
	for _, subagents := range []bool{false, true} {
		t.Run(fmt.Sprintf("subagents=%v", subagents), func(t *testing.T) {
			p := servertest.Pool(t, nestedYAML)
			h := startServer(t, p, Options{})
			h.initialize(subagents)
			sid := h.newSession()
			var live []note
			for _, prompt := range []string{"first prompt", "second prompt"} {
				w, notes := h.call("session/prompt", promptParams(sid, prompt))
				if stopReason(t, w) != stopEndTurn {
					t.Fatal("prompt did not end")
				}
				live = append(live, notes...)
			}
			h.close()

			// A new connection loads it.
			h2 := startServer(t, p, Options{})
			h2.initialize(subagents)
			var res struct {
				Modes modeState `json:"modes"`
			}
			w, replayed := h2.call("session/load", map[string]any{"sessionId": sid, "cwd": "/work", "mcpServers": []any{}})
			if w.Error != nil {
				t.Fatalf("load: %s", w.line)
			}
			_ = json.Unmarshal(w.Result, &res)
			if res.Modes.CurrentModeID != "lead" {
				t.Errorf("modes %+v", res.Modes)
			}
			var prompts []string
			var rest []note
			for _, n := range replayed {
				if n.Update.SessionUpdate == updateUserMessageChunk {
					var c contentBlock
					_ = json.Unmarshal(n.Update.Content, &c)
					prompts = append(prompts, c.Text)
					continue
				}
				rest = append(rest, n)
			}
			if strings.Join(prompts, "|") != "first prompt|second prompt" {
				t.Errorf("replayed prompts %q", prompts)
			}
			var liveRest []note
			for _, n := range live {
				if n.Update.SessionUpdate != updateSessionInfo {
					liveRest = append(liveRest, n)
				}
			}
			if a, b := render(liveRest), render(rest); a != b {
				t.Errorf("replay differs from the live updates:\n%s", diffLines(a, b))
			}
			// The loaded session continues with its history.
			w, _ = h2.call("session/prompt", promptParams(sid, "third"))
			if stopReason(t, w) != stopEndTurn {
				t.Error("prompt after load")
			}
		})
	}
}

func render(notes []note) string {
	var b strings.Builder
	for _, n := range notes {
		j, _ := json.Marshal(n)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestListSessions(t *testing.T) {
	p := servertest.Pool(t, nestedYAML)
	h := startServer(t, p, Options{Cwd: "/default"})
	h.initialize(false)
	sid := h.newSession()
	w, _ := h.call("session/prompt", promptParams(sid, "Plan the research"))
	stopReason(t, w)
	// A session started elsewhere (no cwd of its own).
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "from the CLI"}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Sessions []sessionInfo `json:"sessions"`
	}
	h.mustCall("session/list", map[string]any{}, &list)
	if len(list.Sessions) != 2 || list.Sessions[0].SessionID != res.SessionID || list.Sessions[0].Cwd != "/default" ||
		list.Sessions[1].SessionID != sid || list.Sessions[1].Cwd != "/work" || list.Sessions[1].Title != "Plan the research" ||
		list.Sessions[1].UpdatedAt == "" {
		t.Errorf("list %+v", list.Sessions)
	}
	h.mustCall("session/list", map[string]any{"cwd": "/work"}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != sid {
		t.Errorf("list by cwd %+v", list.Sessions)
	}
}
