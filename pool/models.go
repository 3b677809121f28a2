package pool

import (
	"fmt"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/anthropic"
	"github.com/agentpool/agentpool/model/openai"
	"github.com/agentpool/agentpool/model/testmodel"
)

// NewModel builds the model a manifest entry describes.
func NewModel(spec config.ModelSpec) (model.Model, error) {
	switch spec.Type {
	case "test", "scripted", "":
		cfg := testmodel.Config{Text: spec.CustomOutputText, CallTools: spec.CallTools, ToolArgs: spec.ToolArgs, Delay: spec.Delay}
		for _, t := range spec.Turns {
			turn := testmodel.Turn{Text: t.Text, Thinking: t.Thinking, Error: t.Error, Delay: t.Delay, FinishReason: t.FinishReason}
			for _, c := range t.ToolCalls {
				turn.ToolCalls = append(turn.ToolCalls, testmodel.ToolCall{Name: c.Name, Args: c.Args})
			}
			cfg.Turns = append(cfg.Turns, turn)
		}
		if spec.Type == "scripted" && len(cfg.Turns) == 0 {
			return nil, fmt.Errorf("scripted model needs turns")
		}
		return testmodel.New(cfg)
	case config.ModelOpenAI:
		m, err := openai.New(openai.Config{
			Model: spec.Model, BaseURL: spec.BaseURL, APIKey: spec.APIKey, APIKeyEnv: spec.APIKeyEnv,
			Temperature: spec.Temperature, MaxTokens: spec.MaxTokens, Timeout: spec.Timeout,
			InputPrice: spec.InputPrice, OutputPrice: spec.OutputPrice,
		})
		if err != nil {
			return nil, err
		}
		return m, nil
	case config.ModelAnthropic:
		m, err := anthropic.New(anthropic.Config{
			Model: spec.Model, BaseURL: spec.BaseURL, APIKey: spec.APIKey, APIKeyEnv: spec.APIKeyEnv,
			Temperature: spec.Temperature, MaxTokens: spec.MaxTokens, Timeout: spec.Timeout,
			InputPrice: spec.InputPrice, OutputPrice: spec.OutputPrice,
		})
		if err != nil {
			return nil, err
		}
		return m, nil
	default:
		return nil, fmt.Errorf("model type %q is not supported by this build", spec.Type)
	}
}
