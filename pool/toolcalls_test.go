package pool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
)

// TestToolCallsPerTurnCap: the manifest's max_tool_calls_per_turn reaches
// the agent (and Pool.Manifest), a negative AgentSpec value is refused by
// Build, and a response with more calls runs only that many: the others
// are failed tool calls in the stream that say why.
func TestToolCallsPerTurnCap(t *testing.T) {
	m, err := config.Parse("a.yaml", []byte(`
agents:
  a:
    max_tool_calls_per_turn: 2
    model:
      type: scripted
      turns:
        - tool_calls:
            - {name: get_weather, args: {city: Oslo}}
            - {name: get_weather, args: {city: Rome}}
            - {name: get_weather, args: {city: Lima}}
        - done
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pool.FromManifest(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agents[0].MaxToolCallsPerTurn != 2 {
		t.Fatalf("AgentSpec.MaxToolCallsPerTurn = %d, want 2", cfg.Agents[0].MaxToolCallsPerTurn)
	}
	cfg.Agents[0].Tools = append(cfg.Agents[0].Tools, getWeather)
	p := build(t, cfg, pool.Options{})
	if got := p.Manifest().Agents["a"].MaxToolCallsPerTurn; got != 2 {
		t.Errorf("Manifest: MaxToolCallsPerTurn = %d, want 2", got)
	}
	var ok, refused int
	sink := event.SinkFunc(func(e event.Event) {
		c, isDone := e.(event.ToolCallComplete)
		switch {
		case !isDone:
		case !c.IsError:
			ok++
		case strings.HasPrefix(c.ToolResult, "tool call limit per turn (2) reached: "):
			refused++
		default:
			t.Errorf("tool call failed: %s", c.ToolResult)
		}
	})
	if res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "go"}, sink); err != nil || res.Result.Output != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	if ok != 2 || refused != 1 {
		t.Errorf("%d calls ran and %d were refused, want 2 and 1", ok, refused)
	}

	cfg.Agents[0].MaxToolCallsPerTurn = -1
	if _, err := pool.Build(cfg, pool.Options{}); err == nil || !strings.Contains(err.Error(), `agent "a": MaxToolCallsPerTurn: must not be negative, got -1`) {
		t.Errorf("Build err = %v", err)
	}
}
