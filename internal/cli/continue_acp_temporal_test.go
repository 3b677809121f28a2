package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/session"
)

// TestContinueACPOnTemporal: on the Temporal engine, an editor's prompt
// waits on a grandchild's Write (on an `agentpool worker`) when `serve
// acp` is killed (SIGKILL); the workflow waits on. A new `serve acp` over
// the same store and namespace, the editor loads the session
// (session/load): it is asked again (session/request_permission with the
// same request id, on the child's card), allows it, the answer is
// signalled to the writer's workflow, the file is written, and the
// root's final message reaches the editor as session/update.
func TestContinueACPOnTemporal(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	addr := devServer(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentpool.yaml")
	yaml := deepApprovalManifest + fmt.Sprintf("execution: {engine: temporal, address: %q, task_queue: cli-acp-continue}\nworkspace: .\n", addr)
	if err := os.WriteFile(manifest, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	db := temporalDB(t, dir)
	werr := startWorker(t, manifest, db)
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
	if !strings.HasPrefix(string(again.ToolCall.ToolCallId), "spawn:") {
		t.Errorf("the request's card: %q, want the writer's spawn card", again.ToolCall.ToolCallId)
	}
	ended := second.await(t, func(l string) bool { return strings.Contains(l, "a followed run ended") }, "the followed run's end")
	if !strings.Contains(ended, "stop_reason=completed") {
		t.Fatalf("the followed run: %s\nworker: %s", ended, werr.String())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.md")); err != nil || string(b) != "approved\n" {
		t.Fatalf("notes.md after allowing: %q %v", b, err)
	}
	final := finalMessage(t, dir, db, string(s.SessionId))
	if w := writeResult(t, final); !strings.HasPrefix(w, "Created ") {
		t.Errorf("the Write's result in the root's final message: %q", w)
	}
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
			t.Errorf("%s is %s after the run, want completed", name, st.Status)
		}
	}
}
