package acp_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/server/internal/servertest"
)

// stuckYAML: lead delegates twice to stuck, whose model blocks until its
// session is cancelled, then answers.
const stuckYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: stuck, description: First, prompt: a}}]
        - tool_calls: [{name: task, args: {agent_or_team: stuck, description: Second, prompt: b}}]
        - text: "Lead done."
    tools: [subagent]
  stuck:
    model: {type: blocking}
`

// The editor cancels one child with _agentpool/session/cancel and the
// next with session/cancel and the child's id: each ends aborted, its
// spawn card fails with the words of the cancellation, and the prompt
// goes on to the lead's answer. Unknown and ended sessions are errors.
func TestSDKCancelChild(t *testing.T) {
	servertest.NoLeaks(t)
	started := make(chan string, 2)
	ed := newEditor(t, nil)
	conn, sid, _, _ := sdkSessionWith(t, ed, stuckYAML, servertest.BlockingRegistry(started))
	ctx := context.Background()
	answered := make(chan acpsdk.PromptResponse, 1)
	go func() {
		resp, err := prompt(conn, sid)
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		answered <- resp
	}()

	first := <-started
	if _, err := conn.CallExtension(ctx, "_agentpool/session/cancel", map[string]string{"sessionId": first}); err != nil {
		t.Fatalf("cancel the first child: %v", err)
	}
	second := <-started
	if err := conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(second)}); err != nil {
		t.Fatal(err)
	}
	if resp := <-answered; resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", resp.StopReason)
	}
	ed.mu.Lock()
	for _, child := range []string{first, second} {
		c := ed.cards[string(sid)+"\x00spawn:"+child]
		if c == nil || c.status != "failed" || !strings.Contains(c.text, "Cancelled by the user (from acp).") {
			t.Errorf("the card of %s: %+v", child, c)
		}
	}
	ed.mu.Unlock()

	var rerr *acpsdk.RequestError
	_, err := conn.CallExtension(ctx, "_agentpool/session/cancel", map[string]string{"sessionId": first})
	if !errors.As(err, &rerr) || rerr.Code != -32600 || !strings.Contains(rerr.Message, "not running") {
		t.Errorf("cancel of an ended child: %v", err)
	}
	_, err = conn.CallExtension(ctx, "_agentpool/session/cancel", map[string]string{"sessionId": "ses_unknown"})
	if !errors.As(err, &rerr) || rerr.Code != -32002 {
		t.Errorf("cancel of an unknown session: %v", err)
	}
	_, err = conn.CallExtension(ctx, "_agentpool/session/cancel", map[string]string{})
	if !errors.As(err, &rerr) || rerr.Code != -32602 {
		t.Errorf("cancel without a sessionId: %v", err)
	}
}
