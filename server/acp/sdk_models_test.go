package acp_test

import (
	"context"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
)

// lastAnswer is the text of a stored session's last assistant message.
func lastAnswer(t *testing.T, st session.Store, sid string) string {
	t.Helper()
	msgs, err := st.Messages(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Message.Role == model.RoleAssistant {
			return msgs[i].Message.Text()
		}
	}
	return ""
}

// An editor's model picker (ACP's session/set_model, through the SDK's
// client): session/new offers every model agent's model, the chosen one
// runs the session's next prompts while its children keep their own, the
// choice survives session/load, and session/set_mode goes back to the new
// mode's own model.
func TestSDKSessionModel(t *testing.T) {
	servertest.NoLeaks(t)
	ed := newEditor(t, nil)
	conn, _, ws, _ := sdkSessionWith(t, ed, servertest.ModelChoiceManifest, nil)
	ctx := context.Background()
	st := ed.pool.Store()

	created, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	sid := created.SessionId
	ms := created.Models
	if ms == nil || ms.CurrentModelId != "steady" {
		t.Fatalf("session/new's models: %+v", ms)
	}
	var offered []string
	for _, m := range ms.AvailableModels {
		offered = append(offered, string(m.ModelId))
	}
	if strings.Join(offered, ",") != "steady,planner,quick" {
		t.Fatalf("offered models %v, want steady,planner,quick (the default agent's first, each once)", offered)
	}

	if _, err := conn.UnstableSetSessionModel(ctx, acpsdk.UnstableSetSessionModelRequest{SessionId: sid, ModelId: "planner"}); err != nil {
		t.Fatalf("set_model: %v", err)
	}
	if resp, err := prompt(conn, sid); err != nil || resp.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %+v %v", resp, err)
	}
	if got := lastAnswer(t, st, string(sid)); got != "planned with help" {
		t.Fatalf("the answer on the chosen model: %q", got)
	}
	kids, err := st.ListSessions(ctx, session.ListOptions{ParentID: string(sid)})
	if err != nil || len(kids) != 1 {
		t.Fatalf("children: %+v %v", kids, err)
	}
	if got := lastAnswer(t, st, kids[0].ID); got != "helped" {
		t.Errorf("the child ran on %q, not its own model's answer", got)
	}

	loaded, err := conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Models == nil || loaded.Models.CurrentModelId != "planner" {
		t.Fatalf("session/load's models: %+v", loaded.Models)
	}

	// Back on the mode's own model by choosing it.
	if _, err := conn.UnstableSetSessionModel(ctx, acpsdk.UnstableSetSessionModelRequest{SessionId: sid, ModelId: "steady"}); err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(conn, sid); err != nil {
		t.Fatal(err)
	}
	if got := lastAnswer(t, st, string(sid)); got != "lead answers itself" {
		t.Fatalf("the answer on the mode's own model: %q", got)
	}

	// A team's mode runs on its members' models: no model to choose.
	if _, err := conn.UnstableSetSessionModel(ctx, acpsdk.UnstableSetSessionModelRequest{SessionId: sid, ModelId: "planner"}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "crew"}); err != nil {
		t.Fatal(err)
	}
	stored, err := st.GetSession(ctx, string(sid))
	if err != nil || stored.Metadata["acp_model_of"] != nil {
		t.Fatalf("the stored choice after set_mode: %v %v", stored.Metadata, err)
	}
	_, err = conn.UnstableSetSessionModel(ctx, acpsdk.UnstableSetSessionModelRequest{SessionId: sid, ModelId: "planner"})
	if err == nil || !strings.Contains(err.Error(), "crew") {
		t.Fatalf("set_model in a team's mode: %v", err)
	}
	loaded, err = conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: sid, Cwd: ws, McpServers: []acpsdk.McpServer{}})
	if err != nil || loaded.Models != nil {
		t.Fatalf("a team's mode offers models: %+v %v", loaded.Models, err)
	}

	_, err = conn.UnstableSetSessionModel(ctx, acpsdk.UnstableSetSessionModelRequest{SessionId: sid, ModelId: "gpt-9"})
	if err == nil || !strings.Contains(err.Error(), "unknown model") {
		t.Fatalf("an unknown model: %v", err)
	}
}
