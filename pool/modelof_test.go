package pool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
)

const modelOfYAML = `
default_agent: lead
agents:
  lead:
    model: {type: scripted, model: steady, turns: ["on my own model"]}
    tools: [subagent]
  planner:
    model:
      type: scripted
      model: planner
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, description: Ask, prompt: Help}}]
        - "planned"
  helper:
    model: {type: test, model: quick, call_tools: [], custom_output_text: "helped", input_price: 1, output_price: 2}
teams:
  crew: {mode: parallel, members: [helper]}
`

// TestRunModelOf: RunRequest.ModelOf runs the root agent on another
// agent's model (its run_started says which, its stream_complete names
// it); the children it spawns keep their own; a team root, an unknown
// name and the engine-less checks are errors before the run starts.
func TestRunModelOf(t *testing.T) {
	m, err := config.Parse("models.yaml", []byte(modelOfYAML))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()

	var started []event.RunStarted
	var spawned []event.SpawnSessionStart
	var final event.Message
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "plan", ModelOf: "planner"}, event.SinkFunc(func(e event.Event) {
		switch v := e.(type) {
		case event.RunStarted:
			started = append(started, v)
		case event.SpawnSessionStart:
			spawned = append(spawned, v)
		case event.StreamComplete:
			final = v.Message
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.Output != "planned" || final.Model != "planner" {
		t.Fatalf("the run on planner's model: %q on %q", res.Result.Output, final.Model)
	}
	if len(started) != 1 || started[0].Model != "planner" {
		t.Errorf("run_started of the root: %+v", started)
	}
	if len(spawned) != 1 || spawned[0].ModelID != "quick" {
		t.Errorf("the child keeps its own model: %+v", spawned)
	}
	if res.TotalCost <= 0 {
		t.Errorf("the priced test model cost nothing: %v", res.TotalCost)
	}

	// Its own name, or none: its own model, and run_started names none.
	started = nil
	res, err = p.RunSink(ctx, pool.RunRequest{Prompt: "again", ModelOf: "lead"}, event.SinkFunc(func(e event.Event) {
		if v, ok := e.(event.RunStarted); ok {
			started = append(started, v)
		}
	}))
	if err != nil || res.Result.Output != "on my own model" || len(started) != 1 || started[0].Model != "" {
		t.Fatalf("ModelOf its own name: %v %q %+v", err, res.Result.Output, started)
	}

	for _, c := range []struct {
		req  pool.RunRequest
		want string
	}{
		{pool.RunRequest{Prompt: "x", ModelOf: "nobody"}, `"nobody" is not an agent of the pool with a model of its own`},
		{pool.RunRequest{Prompt: "x", ModelOf: "crew"}, `"crew" is not an agent of the pool`},
		{pool.RunRequest{Prompt: "x", Node: "crew", ModelOf: "planner"}, `"crew" is not a plain agent`},
	} {
		_, err := p.RunSink(ctx, c.req, event.SinkFunc(func(event.Event) {}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error saying %q", c.req, err, c.want)
		}
	}
}
