package acpagent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/internal/opencodetest"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// The real opencode uses the tools served to it: its model is offered
// them as agentpool_<tool>; our Read returns the workspace's file; our
// task tool delegates to a native agent, whose session is a child of
// opencode's (a grandchild of the root) in the store, started by
// spawn_session_start with the tool call id opencode gave the call.
func TestOpencodeUsesServedTools(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	model := opencodetest.NewModel(t, "I read the notes and asked the helper.")
	model.ToolCalls = []opencodetest.ToolCall{
		{Name: "agentpool_Read", Args: `{"file_path":"notes.txt"}`},
		{Name: "agentpool_task", Args: `{"agent_or_team":"helper","prompt":"say hi","description":"ask the helper"}`},
	}
	oc := opencodetest.NewSetup(t, model, "")
	if err := os.WriteFile(filepath.Join(oc.Project, "notes.txt"), []byte("remember the milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	helper, err := testmodel.New(testmodel.Config{Text: "helper says hi"})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := testPoolConfig(t, hook.New(hook.Options{}), nil, pool.Config{
		Agents:    []pool.AgentSpec{{Name: "helper", Description: "says hi", Model: helper}},
		Nodes:     []spawn.Node{newNode(t, acpagentConfig(oc, "opencode")), delegator{name: "parent", child: "opencode", prompts: []string{"Read the notes, then ask the helper."}}},
		NodeTools: map[string]pool.NodeTools{"opencode": {Builtin: []string{config.ToolsetFileAccess, config.ToolsetSubagent}}},
		Workspace: oc.Project,
	})
	res, evs := run(t, context.Background(), p, "parent", "", nil)
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "I read the notes and asked the helper." {
		t.Fatalf("result %+v", res.Result)
	}
	// opencode's first request (a title for the session) offers no tools.
	offered := model.OfferedTools()
	if !slices.ContainsFunc(offered, func(names []string) bool {
		return slices.Contains(names, "agentpool_Read") && slices.Contains(names, "agentpool_task")
	}) {
		t.Fatalf("opencode offered its model %q", offered)
	}
	results := model.ToolResults()
	if len(results) != 2 || !strings.Contains(results[0], "remember the milk") || !strings.Contains(results[1], `helper says hi`) {
		t.Fatalf("tool results %q", results)
	}
	var ocID, grandID string
	for _, e := range evs {
		if s, ok := e.(event.Subagent); ok {
			if st, ok := s.Event.(event.SpawnSessionStart); ok && st.SourceName == "helper" {
				ocID, grandID = s.ChildSessionID, st.ChildSessionID
				if st.ToolCallID != "call_fake_2" {
					t.Errorf("the delegation's tool_call_id %q, want opencode's call_fake_2", st.ToolCallID)
				}
			}
		}
	}
	st := p.Store()
	oc1, err := st.GetSession(context.Background(), ocID)
	if err != nil || oc1.AgentName != "opencode" || oc1.ParentID != res.SessionID {
		t.Fatalf("opencode's session %+v, %v", oc1, err)
	}
	grand, err := st.GetSession(context.Background(), grandID)
	if err != nil || grand.AgentName != "helper" || grand.ParentID != ocID || grand.Status != session.StatusCompleted {
		t.Errorf("helper's session %+v, %v", grand, err)
	}
}

// An async delegation from a served task reaches the agent when it ends:
// once opencode's turn is over, the member's session sends the task's
// result as its next prompt (as our own agents get it with their next
// model request), opencode's model sees it, and the session's final
// message is its answer to that prompt. The transcript keeps both
// answers and the delivered result.
func TestOpencodeGetsAsyncTaskResult(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	model := opencodetest.NewModel(t, "Noted.")
	model.ToolCalls = []opencodetest.ToolCall{
		{Name: "agentpool_task", Args: `{"agent_or_team":"helper","prompt":"say hi","description":"ask the helper","async_mode":true}`},
	}
	oc := opencodetest.NewSetup(t, model, "")
	// The helper streams slowly, so that it is still running when the
	// served task call has returned: the delegation must outlive the call.
	helper, err := testmodel.New(testmodel.Config{Text: "helper says hi", Delay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := testPoolConfig(t, hook.New(hook.Options{}), nil, pool.Config{
		Agents:    []pool.AgentSpec{{Name: "helper", Description: "says hi", Model: helper}},
		Nodes:     []spawn.Node{newNode(t, acpagentConfig(oc, "opencode")), delegator{name: "parent", child: "opencode", prompts: []string{"Ask the helper in the background."}}},
		NodeTools: map[string]pool.NodeTools{"opencode": {Builtin: []string{config.ToolsetSubagent}}},
		Workspace: oc.Project,
	})
	res, evs := run(t, context.Background(), p, "parent", "", nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("result %+v", res.Result)
	}
	delivered := false
	for _, users := range model.UserMessages() {
		for _, u := range users {
			if strings.Contains(u, "Background task") && strings.Contains(u, "helper says hi") {
				delivered = true
			}
		}
	}
	if !delivered {
		t.Fatalf("opencode's model never got the task's result; its user messages: %q", model.UserMessages())
	}
	var ocID string
	for _, e := range evs {
		if end, ok := e.(event.SpawnSessionEnd); ok {
			ocID = end.ChildSessionID
			if end.StopReason != event.StopCompleted || end.LastAssistantMessage != "Noted." {
				t.Errorf("opencode's end %+v", end)
			}
		}
	}
	msgs, err := p.Store().Messages(context.Background(), ocID)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range msgs {
		roles = append(roles, string(m.Message.Role))
	}
	if len(msgs) != 4 || !strings.Contains(msgs[2].Message.Parts[0].Text, "helper says hi") || !msgs[2].Message.Synthetic {
		t.Errorf("opencode's transcript: %q", roles)
	}
}
