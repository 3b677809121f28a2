package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/server/internal/servertest"
)

// Issue 35's scene from an editor: a parallel team of three at work; the
// editor messages member a (_agentpool/session/message), which answers at
// its next turn, cancels b (_agentpool/session/cancel), and c completes;
// the lead's tool result names the three outcomes. Once the prompt has
// ended, a message to the finished member continues it in its session and
// answers with its new answer. Bad requests are errors.
func TestSDKSteerTeamMembers(t *testing.T) {
	servertest.NoLeaks(t)
	started := make(chan servertest.Started, 3)
	release := make(chan struct{})
	ed := newEditor(t, nil)
	conn, sid, _, _ := sdkSessionWith(t, ed, servertest.SteerTeamYAML, servertest.SteerRegistry(started, release))
	ctx := context.Background()
	answered := make(chan acpsdk.PromptResponse, 1)
	go func() {
		resp, err := prompt(conn, sid)
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		answered <- resp
	}()
	m := servertest.SteerMembers(t, started)
	if _, err := conn.CallExtension(ctx, "_agentpool/session/cancel", map[string]string{"sessionId": m["b"]}); err != nil {
		t.Fatalf("cancel b: %v", err)
	}
	if got := callMessage(t, conn, m["a"], "hurry up"); got["status"] != "queued" || got["sessionId"] != m["a"] {
		t.Fatalf("message a: %v", got)
	}
	close(release)
	if resp := <-answered; resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", resp.StopReason)
	}
	servertest.CheckSteerOutcomes(t, ed.pool.Store(), string(sid), "acp")

	// The finished member is continued in its session.
	got := callMessage(t, conn, m["a"], "once more")
	if got["status"] != "continued" || got["stopReason"] != "completed" || got["output"] != "a got: once more" {
		t.Errorf("continue a: %v", got)
	}

	var rerr *acpsdk.RequestError
	for _, c := range []struct {
		params map[string]string
		code   int
		says   string
	}{
		{map[string]string{"text": "hi"}, -32602, "sessionId is required"},
		{map[string]string{"sessionId": m["a"], "text": "  "}, -32602, "text is required"},
		{map[string]string{"sessionId": "ses_unknown", "text": "hi"}, -32002, ""},
		{map[string]string{"sessionId": string(sid), "text": "hi"}, -32600, "send session/prompt"},
	} {
		_, err := conn.CallExtension(ctx, "_agentpool/session/message", c.params)
		if !errors.As(err, &rerr) || rerr.Code != c.code || !strings.Contains(rerr.Message, c.says) {
			t.Errorf("message %v: %v", c.params, err)
		}
	}
}

// callMessage sends _agentpool/session/message and returns its answer.
func callMessage(t *testing.T, conn *acpsdk.ClientSideConnection, sid, text string) map[string]string {
	t.Helper()
	raw, err := conn.CallExtension(context.Background(), "_agentpool/session/message", map[string]string{"sessionId": sid, "text": text})
	if err != nil {
		t.Fatalf("message %s: %v", sid, err)
	}
	var out map[string]string
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("answer %s: %v", raw, err)
	}
	return out
}
