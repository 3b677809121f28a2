package pool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log"
	"strings"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/team"
	"github.com/agentpool/agentpool/tool"
)

// toolCaller is a model.Model written for the examples, the smallest one
// that uses a tool: its first answer calls Tool with Args; once the tool's
// result is in the conversation, it answers with Answer(result).
type toolCaller struct {
	Tool   string
	Args   string // JSON
	Answer func(result model.Part) string
}

func (m toolCaller) ID() string { return "tool-caller" }

func (m toolCaller) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleTool {
			text := m.Answer(last.Parts[0])
			if yield(model.Chunk{Kind: model.ChunkText, Text: text}, nil) {
				yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishStop}, nil)
			}
			return
		}
		call := model.Chunk{Kind: model.ChunkToolCall, ToolCallID: "call_1", ToolName: m.Tool, ArgsDelta: m.Args}
		if yield(call, nil) {
			yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishToolCalls}, nil)
		}
	}
}

// weatherArgs are the arguments of the get_weather tool; the JSON schema
// the model sees is derived from them.
type weatherArgs struct {
	City string `json:"city" jsonschema:"description=The city"`
}

// getWeather is a custom tool.
var getWeather = tool.New("get_weather", "Current weather of a city.",
	func(ctx context.Context, call tool.Call, a weatherArgs) (tool.Result, error) {
		return tool.Result{Content: "sunny in " + a.City}, nil
	})

// weatherConfig is a pool of two agents: lead asks its worker forecaster,
// which alone has the get_weather tool.
func weatherConfig() pool.Config {
	return pool.Config{
		Agents: []pool.AgentSpec{
			{
				Name: "lead", Description: "Answers the user.",
				Model: toolCaller{Tool: "ask_forecaster", Args: `{"prompt":"Weather in Paris?"}`, Answer: func(r model.Part) string {
					var out struct{ Output string } // a worker's result is {"output": ..., "session_id": ...}
					json.Unmarshal([]byte(r.Text), &out)
					return "The forecaster says: " + out.Output
				}},
				Workers: []pool.WorkerSpec{{Name: "forecaster"}},
			},
			{
				Name: "forecaster", Description: "Knows the weather.",
				Model: toolCaller{Tool: "get_weather", Args: `{"city":"Paris"}`, Answer: func(r model.Part) string {
					if r.IsError {
						return "I cannot tell (" + r.Text + ")."
					}
					return "It is " + r.Text + "."
				}},
				Tools: []tool.Tool{getWeather},
			},
		},
	}
}

// A pool from a manifest: config.Parse (or config.Load) validates the YAML,
// pool.New builds it.
func ExampleNew() {
	m, err := config.Parse("agentpool.yaml", []byte(`
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: ask_helper, args: {prompt: "Say hello"}}]
        - "The helper says hello."
    workers: [helper]
  helper:
    model: {type: test, custom_output_text: "hello"}
`))
	if err != nil {
		log.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "Greet me"}, event.Discard)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Result.StopReason, res.Result.Output)
	// Output: completed The helper says hello.
}

// A pool from Go values: a custom model, a custom tool offered to one
// agent, and that agent as the worker of another (the tool ask_forecaster).
func ExampleBuild() {
	p, err := pool.Build(weatherConfig(), pool.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: "lead", Prompt: "Weather?"}, event.Discard)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Result.Output)
	// Output: The forecaster says: It is sunny in Paris.
}

// Build checks a Config as config.Parse checks a manifest: every problem
// is reported, naming the agent or team and the field.
func ExampleBuild_errors() {
	_, err := pool.Build(pool.Config{
		Agents: []pool.AgentSpec{{Name: "lead", Model: toolCaller{}, Workers: []pool.WorkerSpec{{Name: "ghost"}}}},
		Teams:  []pool.TeamSpec{{Name: "crew", Mode: team.Parallel, Members: []string{"lead", "nobody"}}},
	}, pool.Options{})
	fmt.Println(err)
	// Output:
	// agent "lead": Workers[0]: unknown agent, team or node "ghost" (defined: lead, crew)
	// team "crew": Members[1]: unknown agent, team or node "nobody" (defined: lead, crew)
}

// Consuming the event stream: every event of the run, children's events
// wrapped once in an event.Subagent that says which child produced them.
func ExamplePool_Run() {
	p, err := pool.Build(weatherConfig(), pool.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	for e, err := range p.Run(context.Background(), pool.RunRequest{Prompt: "Weather?"}) {
		if err != nil {
			log.Fatal(err) // the run could not start
		}
		depth := 0
		if s, ok := e.(event.Subagent); ok {
			depth, e = s.Depth, s.Event
		}
		indent := strings.Repeat("  ", depth)
		switch v := e.(type) {
		case event.RunStarted:
			fmt.Printf("%s%s runs\n", indent, v.AgentName)
		case event.SpawnSessionStart:
			fmt.Printf("%sspawn %s (%s)\n", indent, v.SourceName, v.SpawnMechanism)
		case event.ToolCallComplete:
			fmt.Printf("%s%s called %s: %v\n", indent, v.AgentName, v.ToolName, !v.IsError)
		case event.SpawnSessionEnd:
			fmt.Printf("%s%s ended: %s\n", indent, v.SourceName, v.StopReason)
		case event.StreamComplete:
			fmt.Printf("%sanswer: %s\n", indent, v.Message.Content)
		}
	}
	// Output:
	// lead runs
	// spawn forecaster (worker)
	//   forecaster runs
	//   forecaster called get_weather: true
	//   answer: It is sunny in Paris.
	// forecaster ended: completed
	// lead called ask_forecaster: true
	// answer: The forecaster says: It is sunny in Paris.
}

// A hook: a *hook.Registry passed as Options.Hooks sees every delegation
// (OnSubagentStart) and decides whether each tool call runs
// (OnPreExecute).
func ExampleBuild_hook() {
	reg := hook.New(hook.Options{})
	reg.OnSubagentStart.Register(func(ctx context.Context, s hook.SubagentStart) error {
		fmt.Printf("%s delegates to %s (%s)\n", s.ParentAgent, s.Name, s.Mechanism)
		return nil
	})
	reg.OnPreExecute.Use(func(ctx context.Context, c hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
		if c.ToolName == "get_weather" {
			return agent.ToolDecision{Action: agent.ToolDeny, Reason: "no forecasts today"}
		}
		return next(ctx, c)
	})
	p, err := pool.Build(weatherConfig(), pool.Options{Hooks: reg})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "Weather?"}, event.Discard)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Result.Output)
	// Output:
	// lead delegates to forecaster (worker)
	// The forecaster says: I cannot tell (tool get_weather denied: no forecasts today).
}
