package durable

import (
	"context"
	"errors"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/tool"
)

// toolset is a toolset with fixed tools or a fixed error (an MCP server's
// stand-in).
type toolset struct {
	name  string
	tools []tool.Tool
	err   error
}

func (s toolset) Name() string                               { return s.name }
func (s toolset) Tools(context.Context) ([]tool.Tool, error) { return s.tools, s.err }

// Under the engine an agent's toolsets are listed by an activity on the
// worker and their calls are Tool activities there: the model is offered
// the toolset's tool and its call runs; a toolset that fails is a
// toolset_error, as in this process.
func TestWorkflowToolsets(t *testing.T) {
	lookup := tool.New("lookup", "looks up", func(context.Context, tool.Call, noArgs) (tool.Result, error) {
		return tool.Result{Content: "found it"}, nil
	})
	boss := scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "lookup", Args: map[string]any{}}}},
		testmodel.Turn{Text: "done"},
	)
	p, err := pool.Build(pool.Config{
		Agents: []pool.AgentSpec{{Name: "boss", Model: boss, Toolsets: []tool.Toolset{
			toolset{name: "mcp server good", tools: []tool.Tool{lookup}},
			toolset{name: "mcp server bad", err: errors.New("did not start")},
		}}},
	}, pool.Options{Store: memory.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	root, out, evs := runWorkflow(t, p, "boss", "go", nil)
	if out.StopReason != event.StopCompleted || out.Output != "done" {
		t.Fatalf("end = %+v", out)
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	var result string
	var failed []any
	for _, e := range evs {
		switch e := e.(type) {
		case event.ToolCallComplete:
			result = e.ToolResult
		case event.Custom:
			if e.EventType == agent.EventToolsetError {
				failed = append(failed, e.EventData["toolset"], e.EventData["error"])
			}
		}
	}
	if result != "found it" {
		t.Errorf("lookup's result = %q", result)
	}
	if len(failed) != 2 || failed[0] != "mcp server bad" || failed[1] != "did not start" {
		t.Errorf("toolset errors = %v", failed)
	}
}
