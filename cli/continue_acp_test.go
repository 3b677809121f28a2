package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/session"
)

// sdkEditor is an editor on the acp-go-sdk client: it hands over every
// session/request_permission it gets and answers it with answer (empty:
// it waits until the agent withdraws it, or the connection ends); it
// keeps the agent's message text.
type sdkEditor struct {
	answer acpsdk.PermissionOptionId
	asked  chan acpsdk.RequestPermissionRequest

	mu   sync.Mutex
	text strings.Builder // agent_message_chunk text, in order
}

func newSDKEditor(answer acpsdk.PermissionOptionId) *sdkEditor {
	return &sdkEditor{answer: answer, asked: make(chan acpsdk.RequestPermissionRequest, 8)}
}

func (e *sdkEditor) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		e.mu.Lock()
		e.text.WriteString(c.Content.Text.Text)
		e.mu.Unlock()
	}
	return nil
}

func (e *sdkEditor) messages() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.text.String()
}

func (e *sdkEditor) RequestPermission(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	e.asked <- p
	if e.answer != "" {
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(e.answer)}, nil
	}
	<-ctx.Done()
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
}

var errNoEditorFS = errors.New("this editor has no file system or terminals")

func (*sdkEditor) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, errNoEditorFS
}
func (*sdkEditor) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, errNoEditorFS
}
func (*sdkEditor) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, errNoEditorFS
}
func (*sdkEditor) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errNoEditorFS
}
func (*sdkEditor) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errNoEditorFS
}
func (*sdkEditor) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errNoEditorFS
}
func (*sdkEditor) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errNoEditorFS
}

// acpEditorProc is `agentpool serve acp` over database db in dir, with an
// SDK client connected to its stdin and stdout.
type acpEditorProc struct {
	*serveProc
	conn  *acpsdk.ClientSideConnection
	stdin io.WriteCloser
}

// startACPEditor starts `agentpool serve acp` and connects ed to it; the
// cleanup kills it if the test did not end it.
func startACPEditor(t *testing.T, dir, db string, ed *sdkEditor) *acpEditorProc {
	t.Helper()
	cmd := exec.Command(cliBinary(t), "serve", "acp", "--db", db, "-c", "agentpool.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "HOME="+filepath.Join(dir, "home"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &acpEditorProc{serveProc: &serveProc{cmd: cmd, logs: make(chan string, 4096)}, stdin: stdin}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	go func() {
		defer close(p.logs)
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			select {
			case p.logs <- sc.Text():
			default:
			}
		}
	}()
	p.conn = acpsdk.NewClientSideConnection(ed, stdin, stdout)
	// The editor asks for the spawn tool calls (the tests name a
	// grandchild's card).
	caps := acpsdk.ClientCapabilities{Meta: map[string]any{"agentpool": map[string]any{"spawn_tool_calls": true}}}
	if _, err := p.conn.Initialize(context.Background(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber, ClientCapabilities: caps}); err != nil {
		t.Fatal(err)
	}
	return p
}

// nextAsked is the editor's next session/request_permission, within a
// minute.
func nextAsked(t *testing.T, ed *sdkEditor) acpsdk.RequestPermissionRequest {
	t.Helper()
	select {
	case p := <-ed.asked:
		return p
	case <-time.After(time.Minute):
		t.Fatal("the editor was not asked within a minute")
	}
	panic("unreachable")
}

// requestID is the broker's request id of a session/request_permission.
func requestID(p acpsdk.RequestPermissionRequest) string {
	ap, _ := p.ToolCall.Meta["agentpool"].(map[string]any)
	id, _ := ap["request_id"].(string)
	return id
}

// TestContinueACPAfterKill: an editor's prompt waits on a grandchild's
// Write when `serve acp` is killed (SIGKILL); a new `serve acp` over the
// same database, the editor loads the session (session/load): it is asked
// again (session/request_permission with the same request id), allows
// it, the file is written and the root's final message, carrying the
// Write's result, reaches the editor as session/update.
func TestContinueACPAfterKill(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(deepApprovalManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	db := sqliteDB(t, dir)
	ctx := context.Background()

	ed1 := newSDKEditor("")
	first := startACPEditor(t, dir, db, ed1)
	s, err := first.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	go first.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("go")}})
	asked := nextAsked(t, ed1)
	id := requestID(asked)
	if id == "" {
		t.Fatalf("the first request has no request id: %+v", asked.ToolCall)
	}
	first.kill(t)
	if _, err := os.Stat(filepath.Join(dir, "notes.md")); !os.IsNotExist(err) {
		t.Fatalf("notes.md before any answer: %v", err)
	}

	ed2 := newSDKEditor("allow_once")
	second := startACPEditor(t, dir, db, ed2)
	if _, err := second.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: s.SessionId, Cwd: dir, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	again := nextAsked(t, ed2)
	if requestID(again) != id || again.SessionId != s.SessionId {
		t.Fatalf("asked after the restart: request %q on %s, want %s on %s", requestID(again), again.SessionId, id, s.SessionId)
	}
	if want := "writer (child of mid): Write notes.md"; again.ToolCall.Title == nil || *again.ToolCall.Title != want {
		t.Errorf("the request's title: %v, want %q", again.ToolCall.Title, want)
	}
	ended := second.await(t, func(l string) bool { return strings.Contains(l, "a continued run ended") }, "the continued run's end")
	if !strings.Contains(ended, "stop_reason=completed") {
		t.Fatalf("the continued run: %s", ended)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.md")); err != nil || string(b) != "approved\n" {
		t.Fatalf("notes.md after allowing: %q %v", b, err)
	}
	final := finalMessage(t, dir, db, string(s.SessionId))
	if w := writeResult(t, final); !strings.HasPrefix(w, "Created ") {
		t.Errorf("the Write's result in the root's final message: %q", w)
	}
	// The root's final message is the last the editor was sent (the
	// session/update notifications come before the log line above only
	// in the server's order; the client may still be reading them).
	second.stdin.Close()
	if err := second.cmd.Wait(); err != nil {
		t.Errorf("serve acp after its input ended: %v", err)
	}
	<-second.conn.Done()
	if got := ed2.messages(); !strings.HasSuffix(got, final) {
		t.Errorf("the editor's messages end with %q, want the root's final message %q", tail(got, 300), final)
	}
	for name, st := range sessionsOf(t, dir, db) {
		if st.Status != session.StatusCompleted {
			t.Errorf("%s is %s after the continued run, want completed", name, st.Status)
		}
	}
	tree := runCLI(t, dir, "sessions", "events", "--db", db, "--json", "--tree", string(s.SessionId))
	if err := eventtest.CheckInvariants(string(s.SessionId), decodeJSONL(t, tree.stdout)); err != nil {
		t.Errorf("the stored tree of the continued run: %v", err)
	}
}
