package acp_test

// The acp-go-sdk client (github.com/coder/acp-go-sdk), written by others,
// as the editor of the real server: a grandchild's Write approved, a
// rejected Write the child sees, and a cancel while the editor is asked.

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/acp"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

// grandchildYAML: lead --task--> mid --task--> writer, whose Write asks
// (the default rule of Write).
const grandchildYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: mid, description: Delegate on, prompt: Have the writer write hello.md.}}]
        - text: "Lead done."
    tools: [subagent]
  mid:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: writer, description: Write the note, prompt: Write hello.md.}}]
        - text: "Mid done."
    tools: [subagent]
  writer:
    tools: [file_access]
    model:
      type: test
      call_tools: [Write]
      tool_args:
        Write: {file_path: hello.md, content: "hello from the grandchild\n"}
`

// card is a tool call as the editor holds it (tool_call inserts or
// replaces, tool_call_update changes the fields it names).
type card struct {
	title, kind, status string
	titles              []string // every title it had, in order
	text                string   // its content's text
}

// editor is an ACP client on the SDK: it keeps the tool calls it was
// shown and answers session/request_permission with answer (nil: it waits
// until the agent withdraws the request, then answers cancelled).
type editor struct {
	t      *testing.T
	answer *acpsdk.PermissionOptionId

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced at every update
	cards     map[string]*card
	asked     []acpsdk.RequestPermissionRequest
	askedCh   chan struct{}             // closed at the first request
	withdrawn chan struct{}             // closed when the agent cancelled a request
	commands  []acpsdk.AvailableCommand // the last available_commands_update
	pool      *pool.Pool                // the server's pool (sdkSessionWith)
	// flat: the editor announces no _meta.agentpool spawn_tool_calls
	// (set before sdkSessionWith): delegations are their tool calls.
	flat bool
}

func newEditor(t *testing.T, answer *acpsdk.PermissionOptionId) *editor {
	return &editor{t: t, answer: answer, changed: make(chan struct{}), cards: map[string]*card{},
		askedCh: make(chan struct{}), withdrawn: make(chan struct{})}
}

func (e *editor) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := func(id acpsdk.ToolCallId) string { return string(n.SessionId) + "\x00" + string(id) }
	switch u := n.Update; {
	case u.AvailableCommandsUpdate != nil:
		e.commands = u.AvailableCommandsUpdate.AvailableCommands
	case u.ToolCall != nil:
		c := e.cards[key(u.ToolCall.ToolCallId)]
		if c == nil {
			c = &card{}
			e.cards[key(u.ToolCall.ToolCallId)] = c
		}
		c.title, c.kind, c.status = u.ToolCall.Title, string(u.ToolCall.Kind), string(u.ToolCall.Status)
		c.titles = append(c.titles, c.title)
		c.text = contentText(u.ToolCall.Content)
	case u.ToolCallUpdate != nil:
		c := e.cards[key(u.ToolCallUpdate.ToolCallId)]
		if c == nil {
			e.t.Errorf("tool_call_update of a card never shown: %s", u.ToolCallUpdate.ToolCallId)
			return nil
		}
		if v := u.ToolCallUpdate.Title; v != nil {
			c.title = *v
			c.titles = append(c.titles, c.title)
		}
		if v := u.ToolCallUpdate.Kind; v != nil {
			c.kind = string(*v)
		}
		if v := u.ToolCallUpdate.Status; v != nil {
			c.status = string(*v)
		}
		if u.ToolCallUpdate.Content != nil {
			c.text = contentText(u.ToolCallUpdate.Content)
		}
	}
	close(e.changed)
	e.changed = make(chan struct{})
	return nil
}

func contentText(cs []acpsdk.ToolCallContent) string {
	var parts []string
	for _, c := range cs {
		if c.Content != nil && c.Content.Content.Text != nil {
			parts = append(parts, c.Content.Content.Text.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// RequestPermission checks that the tool call it names was announced
// pending with the same title and kind (the SDK hands over notifications
// and requests on different goroutines: it waits for the announcement),
// then answers.
func (e *editor) RequestPermission(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	key := string(p.SessionId) + "\x00" + string(p.ToolCall.ToolCallId)
	bound := time.NewTimer(servertest.WaitBound)
	defer bound.Stop()
	for {
		e.mu.Lock()
		c, changed := e.cards[key], e.changed
		ok := c != nil && c.status == "pending" && p.ToolCall.Title != nil && c.title == *p.ToolCall.Title &&
			p.ToolCall.Kind != nil && c.kind == string(*p.ToolCall.Kind)
		e.mu.Unlock()
		if ok {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			e.t.Errorf("request_permission for %s, never announced pending", key)
			return acpsdk.RequestPermissionResponse{}, ctx.Err()
		case <-bound.C:
			e.t.Errorf("request_permission for %s, never announced pending", key)
			return acpsdk.RequestPermissionResponse{}, errors.New("not announced")
		}
	}
	e.mu.Lock()
	e.asked = append(e.asked, p)
	if len(e.asked) == 1 {
		close(e.askedCh)
	}
	e.mu.Unlock()
	if e.answer != nil {
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(*e.answer)}, nil
	}
	<-ctx.Done() // the agent's $/cancel_request (or the end of the connection)
	close(e.withdrawn)
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
}

var errNoFS = errors.New("this editor has no file system or terminals")

func (*editor) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, errNoFS
}
func (*editor) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, errNoFS
}
func (*editor) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, errNoFS
}
func (*editor) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errNoFS
}
func (*editor) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errNoFS
}
func (*editor) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errNoFS
}
func (*editor) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errNoFS
}

// sdkSession serves a pool that asks through a broker to the editor over
// pipes, and opens a session in a new workspace.
func sdkSession(t *testing.T, ed *editor) (conn *acpsdk.ClientSideConnection, sid acpsdk.SessionId, ws string, b *approval.Broker) {
	t.Helper()
	return sdkSessionWith(t, ed, grandchildYAML, nil)
}

// sdkSessionWith is sdkSession with the manifest src and the pool's
// registry reg (nil: the default).
func sdkSessionWith(t *testing.T, ed *editor, src string, reg *pool.Registry, cmds ...pool.Command) (conn *acpsdk.ClientSideConnection, sid acpsdk.SessionId, ws string, b *approval.Broker) {
	t.Helper()
	if reg == nil {
		reg = pool.NewRegistry()
	}
	m, err := config.ParseWith("agentpool.yaml", []byte(src), config.Options{ModelTypes: reg.ModelTypes()})
	if err != nil {
		t.Fatal(err)
	}
	hooks := hook.New(hook.Options{})
	b, err = approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hooks.UseBroker(b)
	ws = t.TempDir()
	p, err := pool.New(m, pool.Options{Workspace: ws, Hooks: hooks, Registry: reg, Commands: cmds})
	if err != nil {
		t.Fatal(err)
	}
	ed.pool = p
	t.Cleanup(func() { p.Close(); hooks.Close(context.Background()) })
	srv, err := acp.New(acp.Options{Pool: p, Approvals: b, ProgressInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	toAgentR, toAgentW := io.Pipe()
	toEditorR, toEditorW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(context.Background(), toAgentR, toEditorW)
		toEditorW.Close()
	}()
	conn = acpsdk.NewClientSideConnection(ed, toAgentW, toEditorR)
	t.Cleanup(func() {
		toAgentW.Close() // the server's input ends: Serve returns
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		<-conn.Done()
		toAgentR.Close()
	})
	ctx := context.Background()
	caps := acpsdk.ClientCapabilities{Meta: map[string]any{"agentpool": map[string]any{"spawn_tool_calls": true}}}
	if ed.flat {
		caps = acpsdk.ClientCapabilities{}
	}
	if _, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		t.Fatal(err)
	}
	s, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return conn, s.SessionId, ws, b
}

func prompt(conn *acpsdk.ClientSideConnection, sid acpsdk.SessionId) (acpsdk.PromptResponse, error) {
	return conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("go")}})
}

// spawnCard is the editor's card of the one request asked: it must be a
// spawn tool call that showed "Spawned: writer" before it asked.
func spawnCard(t *testing.T, ed *editor) *card {
	t.Helper()
	ed.mu.Lock()
	defer ed.mu.Unlock()
	if len(ed.asked) != 1 {
		t.Fatalf("asked %d times, want 1", len(ed.asked))
	}
	p := ed.asked[0]
	if want := "writer (child of mid): Write hello.md"; p.ToolCall.Title == nil || *p.ToolCall.Title != want {
		t.Errorf("request title %v, want %q", p.ToolCall.Title, want)
	}
	id := string(p.ToolCall.ToolCallId)
	if !strings.HasPrefix(id, "spawn:") {
		t.Errorf("the grandchild's request names %q, not its spawn tool call", id)
	}
	c := ed.cards[string(p.SessionId)+"\x00"+id]
	if c == nil || len(c.titles) < 2 || c.titles[0] != "Spawned: writer" {
		t.Fatalf("card %+v: not the grandchild's spawn tool call shown before", c)
	}
	return c
}

func TestSDKEditorApprovesGrandchildWrite(t *testing.T) {
	servertest.NoLeaks(t)
	allow := acpsdk.PermissionOptionId("allow_once")
	ed := newEditor(t, &allow)
	conn, sid, ws, _ := sdkSession(t, ed)
	resp, err := prompt(conn, sid)
	if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	c := spawnCard(t, ed)
	if c.title != "Spawned: writer" || c.status != "completed" {
		t.Errorf("the card ended as %q (%s), want its own title, completed", c.title, c.status)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.md")); err != nil || string(b) != "hello from the grandchild\n" {
		t.Errorf("hello.md: %q, %v", b, err)
	}
}

// An editor without the spawn tool calls is asked on the one tool call it
// was shown for the delegation, the lead's task call, which has the
// grandchild's progress nested in its content and ends as itself.
func TestSDKEditorApprovesGrandchildWriteFlat(t *testing.T) {
	servertest.NoLeaks(t)
	allow := acpsdk.PermissionOptionId("allow_once")
	ed := newEditor(t, &allow)
	ed.flat = true
	conn, sid, ws, _ := sdkSession(t, ed)
	resp, err := prompt(conn, sid)
	if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	ed.mu.Lock()
	defer ed.mu.Unlock()
	if len(ed.asked) != 1 {
		t.Fatalf("asked %d times, want 1", len(ed.asked))
	}
	p := ed.asked[0]
	if want := "writer (child of mid): Write hello.md"; p.ToolCall.Title == nil || *p.ToolCall.Title != want {
		t.Errorf("request title %v, want %q", p.ToolCall.Title, want)
	}
	id := string(p.ToolCall.ToolCallId)
	if strings.HasPrefix(id, "spawn:") || len(ed.cards) != 1 {
		t.Errorf("the request names %q among %d cards, want the lead's task call alone", id, len(ed.cards))
	}
	c := ed.cards[string(p.SessionId)+"\x00"+id]
	if c == nil || c.title != "Delegate on" || c.status != "completed" || !slices.Contains(c.titles, "writer (child of mid): Write hello.md") {
		t.Fatalf("card %+v: not the lead's task call, asked on and put back", c)
	}
	for _, want := range []string{"→ spawned writer", "  → Write hello.md", "✓ writer", "Mid done."} {
		if !strings.Contains(c.text, want) {
			t.Errorf("the card's text lacks %q:\n%s", want, c.text)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.md")); err != nil || string(b) != "hello from the grandchild\n" {
		t.Errorf("hello.md: %q, %v", b, err)
	}
}

func TestSDKEditorRejectsWrite(t *testing.T) {
	servertest.NoLeaks(t)
	reject := acpsdk.PermissionOptionId("reject_once")
	ed := newEditor(t, &reject)
	conn, sid, ws, _ := sdkSession(t, ed)
	resp, err := prompt(conn, sid)
	if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	c := spawnCard(t, ed)
	if c.title != "Spawned: writer" || c.status != "completed" {
		t.Errorf("the card ended as %q (%s), want its own title, completed", c.title, c.status)
	}
	// The writer saw the rejection and said so in its answer.
	if !strings.Contains(c.text, "approval rejected: rejected by the user in acp") {
		t.Errorf("the writer's answer does not show the rejection: %q", c.text)
	}
	if _, err := os.Stat(filepath.Join(ws, "hello.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a rejected Write wrote hello.md: %v", err)
	}
}

func TestSDKEditorCancelsWhileAsked(t *testing.T) {
	servertest.NoLeaks(t)
	ed := newEditor(t, nil)
	conn, sid, ws, b := sdkSession(t, ed)
	type result struct {
		resp acpsdk.PromptResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		r, err := prompt(conn, sid)
		done <- result{r, err}
	}()
	<-ed.askedCh
	if err := conn.Cancel(context.Background(), acpsdk.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.resp.StopReason != acpsdk.StopReasonCancelled {
		t.Fatalf("prompt: %+v, %v", r.resp, r.err)
	}
	<-ed.withdrawn // the agent withdrew the question: no hanging request
	c := spawnCard(t, ed)
	if c.status != "failed" || c.title != "Spawned: writer" {
		t.Errorf("the card ended as %q (%s), want its own title, failed", c.title, c.status)
	}
	if p := b.Pending(); len(p) != 0 {
		t.Errorf("still pending: %+v", p)
	}
	if _, err := os.Stat(filepath.Join(ws, "hello.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a cancelled Write wrote hello.md: %v", err)
	}
}
