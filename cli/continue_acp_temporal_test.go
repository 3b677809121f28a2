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

// reloadOnTemporal runs the deep approval manifest on Temporal with an
// agentpool worker, prompts from a first `serve acp` until the
// grandchild's Write is asked, kills it (SIGKILL), and loads the session
// in a second `serve acp` whose editor answers with answer.
func reloadOnTemporal(t *testing.T, answer acpsdk.PermissionOptionId) (dir, db string, s acpsdk.NewSessionResponse, id string, second *acpEditorProc, ed2 *sdkEditor, werr *lockedBuf) {
	t.Helper()
	addr := devServer(t)
	dir = t.TempDir()
	manifest := filepath.Join(dir, "agentpool.yaml")
	yaml := deepApprovalManifest + fmt.Sprintf("execution: {engine: temporal, address: %q, task_queue: %q}\nworkspace: .\n", addr, "cli-"+t.Name())
	if err := os.WriteFile(manifest, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	db = temporalDB(t, dir)
	werr = startWorker(t, manifest, db)
	ctx := context.Background()

	ed1 := newSDKEditor("")
	first := startACPEditor(t, dir, db, ed1)
	var err error
	s, err = first.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	go first.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("go")}})
	asked := nextAsked(t, ed1)
	id = requestID(asked)
	if id == "" {
		t.Fatalf("the first request has no request id: %+v", asked.ToolCall)
	}
	first.kill(t)
	if _, err := os.Stat(filepath.Join(dir, "notes.md")); !os.IsNotExist(err) {
		t.Fatalf("notes.md before any answer: %v", err)
	}

	ed2 = newSDKEditor(answer)
	second = startACPEditor(t, dir, db, ed2)
	if _, err := second.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: s.SessionId, Cwd: dir, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	return dir, db, s, id, second, ed2, werr
}

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
	dir, db, s, id, second, ed2, werr := reloadOnTemporal(t, "allow_once")
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

// TestCancelFollowedRunOnTemporal: session/cancel of a root that a
// session/load follows on Temporal, while its request is asked again,
// cancels the run on the engine: the request is withdrawn, the run ends
// aborted and nothing is written.
func TestCancelFollowedRunOnTemporal(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir, db, s, id, second, ed2, _ := reloadOnTemporal(t, "")
	if again := nextAsked(t, ed2); requestID(again) != id {
		t.Fatalf("asked after the restart: %q, want %q", requestID(again), id)
	}
	if err := second.conn.Cancel(context.Background(), acpsdk.CancelNotification{SessionId: s.SessionId}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	ended := second.await(t, func(l string) bool { seen = append(seen, l); return strings.Contains(l, "a followed run ended") }, "the followed run's end")
	if !strings.Contains(ended, "stop_reason=aborted") {
		t.Fatalf("the cancelled run: %s\n%s", ended, strings.Join(seen, "\n"))
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.md")); !os.IsNotExist(err) {
		t.Errorf("notes.md after the cancel: %v", err)
	}
	root := sessionsOf(t, dir, db)["lead"]
	if root.Status == session.StatusRunning || root.Status == session.StatusCompleted {
		t.Errorf("the root after the cancel is %s; the server's log:\n%s", root.Status, strings.Join(seen, "\n"))
	}
}
