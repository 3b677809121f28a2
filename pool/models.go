package pool

import (
	"fmt"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
)

// newTestModel builds the offline test model (type test: AgentPool's
// call_tools and custom_output_text; type scripted: one turn per call).
func newTestModel(spec config.ModelSpec) (model.Model, error) {
	cfg := testmodel.Config{
		Text: spec.CustomOutputText, CallTools: spec.CallTools, ToolArgs: spec.ToolArgs,
		CallAll: spec.CallAllTools, Seed: spec.Seed, Delay: spec.Delay, PreStreamDelay: spec.PreStreamDelay,
		Name: spec.Model, InputPrice: spec.InputPrice, OutputPrice: spec.OutputPrice,
	}
	for _, t := range spec.Turns {
		turn := testmodel.Turn{Text: t.Text, Thinking: t.Thinking, Error: t.Error, Delay: t.Delay, FinishReason: t.FinishReason}
		for _, c := range t.ToolCalls {
			turn.ToolCalls = append(turn.ToolCalls, testmodel.ToolCall{Name: c.Name, Args: c.Args})
		}
		cfg.Turns = append(cfg.Turns, turn)
	}
	if spec.Type == config.ModelScripted && len(cfg.Turns) == 0 {
		return nil, fmt.Errorf("scripted model needs turns")
	}
	return testmodel.New(cfg)
}
