package acp_test

import (
	"context"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

// The pool's slash commands reach the editor in available_commands_update
// right after session/new, and a prompt "/fix 42" runs the command's
// template with its arguments.
func TestSDKSlashCommands(t *testing.T) {
	servertest.NoLeaks(t)
	ed := newEditor(t, nil)
	conn, sid, _, _ := sdkSessionWith(t, ed, "agents:\n  a: {model: {type: scripted, turns: [\"fixed\"]}}\n", nil,
		pool.Command{Name: "fix", Description: "Fix an issue", Template: "Fix issue $ARGUMENTS now."},
		pool.Command{Name: "review", Source: "project", Template: "Review the diff."})
	resp, err := conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/fix 42")}})
	if err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", resp, err)
	}
	ed.mu.Lock()
	cmds := ed.commands
	ed.mu.Unlock()
	if len(cmds) != 2 || cmds[0].Name != "fix" || cmds[0].Description != "Fix an issue" || cmds[0].Input == nil ||
		cmds[1].Name != "review" || cmds[1].Description != "/review (project command)" || cmds[1].Input != nil {
		t.Fatalf("available commands %+v", cmds)
	}
	msgs, err := ed.pool.Store().Messages(context.Background(), string(sid))
	if err != nil || len(msgs) == 0 || msgs[0].Message.Text() != "Fix issue 42 now." {
		t.Fatalf("the session's first message: %+v %v", msgs, err)
	}
}
