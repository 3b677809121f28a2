package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// TestClientToolEndsTheRun: a turn that calls a client tool and one of
// the agent's own runs the agent's, announces the client's and ends the
// run with it open; the model was offered both, with the run's
// instructions after its system prompt.
func TestClientToolEndsTheRun(t *testing.T) {
	m := &callsModel{calls: []call{
		{"call_own", "count", `{"n":1}`},
		{"call_client", "pick", `{"color":"red"}`},
	}}
	var c counter
	a, err := agent.New(agent.Config{Name: "a", SystemPrompt: "Be brief.", Model: m, Tools: []tool.Tool{c.tool()}})
	if err != nil {
		t.Fatal(err)
	}
	res, rec, st := runAgentWith(t, context.Background(), a, "go", func(inv *spawn.Invocation) {
		inv.ClientTools = []model.ToolSpec{{Name: "pick", Description: "the user picks a color"}}
		inv.Instructions = "The page shows a palette."
	})
	if res.StopReason != event.StopCompleted || len(res.ClientCalls) != 1 || res.ClientCalls[0].ToolCallID != "call_client" {
		t.Fatalf("result %+v", res)
	}
	req := m.lastRequest()
	if len(m.reqs) != 1 || req.System != "Be brief.\n\nThe page shows a palette." || len(req.Tools) != 2 || req.Tools[1].Name != "pick" {
		t.Fatalf("%d requests; system %q, tools %+v", len(m.reqs), req.System, req.Tools)
	}
	evs := completes(t, rec.evs)
	if _, ok := evs["call_client"]; ok || evs["call_own"].ToolResult != "counted 1" {
		t.Errorf("tool_call_complete events %+v: want the agent's call alone", evs)
	}
	started := false
	for _, e := range rec.evs {
		if s, ok := e.(event.ToolCallStart); ok && s.ToolCallID == "call_client" {
			started = true
		}
	}
	if !started {
		t.Error("the client's call has no tool_call_start")
	}
	stored, err := st.Messages(context.Background(), "ses_root")
	if err != nil {
		t.Fatal(err)
	}
	// user, assistant (both calls), the agent's result; the client's call open.
	if len(stored) != 3 || stored[2].Role != model.RoleTool || len(stored[2].Parts) != 1 || stored[2].Parts[0].ToolCallID != "call_own" {
		t.Fatalf("stored %+v", stored)
	}
}

func TestClientToolNamedAsOwnFails(t *testing.T) {
	var c counter
	a, err := agent.New(agent.Config{Name: "a", Model: &callsModel{}, Tools: []tool.Tool{c.tool()}})
	if err != nil {
		t.Fatal(err)
	}
	res, _, _ := runAgentWith(t, context.Background(), a, "go", func(inv *spawn.Invocation) {
		inv.ClientTools = []model.ToolSpec{{Name: "count"}}
	})
	if res.StopReason != event.StopError || res.Err == nil || !strings.Contains(res.Err.Error(), `client tool "count": agent a has a tool of that name`) {
		t.Fatalf("result %+v", res)
	}
}
