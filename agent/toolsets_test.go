package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// staticToolset is a run-time toolset with fixed tools or a fixed error.
type staticToolset struct {
	name  string
	tools []tool.Tool
	err   error
	calls int
}

func (s *staticToolset) Name() string { return s.name }
func (s *staticToolset) Tools(context.Context) ([]tool.Tool, error) {
	s.calls++
	return s.tools, s.err
}

// locatedTool reports the file of its input and returns display fields.
type locatedTool struct{ tool.Tool }

func (locatedTool) Locations(c tool.Call) []tool.Location {
	var in struct {
		Path string `json:"path"`
	}
	json.Unmarshal(c.Args, &in)
	return []tool.Location{{Path: "/ws/" + in.Path, Line: 3}}
}

func TestToolsetsExtraAndDisplayFields(t *testing.T) {
	var sessions []string
	old := "a"
	mk := func(name string) tool.Tool {
		return tool.New(name, name, func(_ context.Context, c tool.Call, a struct {
			Path string `json:"path"`
		}) (tool.Result, error) {
			sessions = append(sessions, c.SessionID)
			return tool.Result{Content: name + " " + a.Path, Diffs: []tool.Diff{{Path: a.Path, OldText: &old, NewText: "b"}},
				Locations: []tool.Location{{Path: a.Path}}, Metadata: map[string]any{"n": 1}}, nil
		})
	}
	good := &staticToolset{name: "mcp server good", tools: []tool.Tool{locatedTool{mk("mcp__good__edit")}}}
	bad := &staticToolset{name: "mcp server bad", err: errors.New("did not start")}
	ctxSet := &staticToolset{name: "session set", tools: []tool.Tool{mk("from_session_set")}}
	a, err := agent.New(agent.Config{Name: "a", Toolsets: []tool.Toolset{good, bad}, Model: scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "mcp__good__edit", Args: map[string]any{"path": "f.go"}}}},
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "extra", Args: map[string]any{"path": "g"}}}},
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "from_session_set", Args: map[string]any{"path": "h"}}}},
		testmodel.Turn{Text: "done"},
	)})
	if err != nil {
		t.Fatal(err)
	}
	extra := &staticToolset{name: "lent", tools: []tool.Tool{mk("extra")}}
	res, rec, _ := runAgentWith(t, context.Background(), a, "go", func(inv *spawn.Invocation) {
		inv.Toolsets = []tool.Toolset{extra, ctxSet}
	})
	if res.Err != nil || res.Output != "done" {
		t.Fatalf("result %+v", res)
	}
	if good.calls != 1 || bad.calls != 1 || ctxSet.calls != 1 {
		t.Errorf("toolsets asked %d, %d, %d times; want once each per run", good.calls, bad.calls, ctxSet.calls)
	}
	if !reflect.DeepEqual(sessions, []string{"ses_root", "ses_root", "ses_root"}) {
		t.Errorf("calls carried session ids %v", sessions)
	}
	var toolsetErr *event.Custom
	var start event.ToolCallStart
	var completes []event.ToolCallComplete
	for i, e := range rec.evs {
		switch v := e.(type) {
		case event.Custom:
			if v.EventType == agent.EventToolsetError {
				toolsetErr = &v
				if i == 0 {
					t.Error("toolset_error before run_started")
				}
			}
		case event.ToolCallStart:
			if v.ToolName == "mcp__good__edit" {
				start = v
			}
		case event.ToolCallComplete:
			completes = append(completes, v)
		}
	}
	if toolsetErr == nil || toolsetErr.EventData["toolset"] != "mcp server bad" || toolsetErr.EventData["error"] != "did not start" {
		t.Errorf("toolset error event = %+v", toolsetErr)
	}
	if want := []event.Location{{Path: "/ws/f.go", Line: 3}}; !reflect.DeepEqual(start.Locations, want) {
		t.Errorf("start locations %+v, want %+v", start.Locations, want)
	}
	if len(completes) != 3 {
		t.Fatalf("%d completes", len(completes))
	}
	c := completes[0]
	if c.IsError || c.ToolResult != "mcp__good__edit f.go" || len(c.Diffs) != 1 || *c.Diffs[0].OldText != "a" || c.Diffs[0].NewText != "b" ||
		c.Locations[0].Path != "f.go" || c.Metadata["n"] != 1 {
		t.Errorf("complete = %+v", c)
	}
	for _, c := range completes[1:] {
		if c.IsError {
			t.Errorf("%s failed: %s", c.ToolName, c.ToolResult)
		}
	}
}

func TestAgentsOwnToolWinsOverLent(t *testing.T) {
	own := tool.New("dup", "own", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		return tool.Result{Content: "own"}, nil
	})
	other := tool.New("dup", "other", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		return tool.Result{Content: "other"}, nil
	})
	a, err := agent.New(agent.Config{Name: "a", Tools: []tool.Tool{own}, Model: scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "dup"}}}, testmodel.Turn{Text: "ok"})})
	if err != nil {
		t.Fatal(err)
	}
	_, rec, _ := runAgentWith(t, context.Background(), a, "go", func(inv *spawn.Invocation) {
		inv.Toolsets = []tool.Toolset{&staticToolset{name: "lent", tools: []tool.Tool{other}}}
	})
	for _, e := range rec.evs {
		if c, ok := e.(event.ToolCallComplete); ok && c.ToolResult != "own" {
			t.Errorf("result %q: the extra tool replaced the agent's own", c.ToolResult)
		}
	}
}
