package pool

import (
	"fmt"
	"os"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/anthropic"
	"github.com/agentpool/agentpool/model/fallback"
	"github.com/agentpool/agentpool/model/openai"
	"github.com/agentpool/agentpool/model/testmodel"
)

// The builtin model types.
func init() {
	RegisterModel(config.ModelTest, newTestModel)
	RegisterModel(config.ModelScripted, newTestModel)
	RegisterModel(config.ModelOpenAI, newOpenAI)
	RegisterModel(config.ModelAnthropic, newAnthropic)
	RegisterModel(config.ModelFallback, newFallback)
}

// newTestModel builds the offline test model (type test: AgentPool's
// call_tools and custom_output_text; type scripted: one turn per call).
func newTestModel(spec config.ModelSpec) (model.Model, error) {
	cfg := testmodel.Config{
		Text: spec.CustomOutputText, CallTools: spec.CallTools, ToolArgs: spec.ToolArgs,
		CallAll: spec.CallAllTools, Seed: spec.Seed, Delay: spec.Delay,
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

func newOpenAI(spec config.ModelSpec) (model.Model, error) {
	st := spec.Settings
	cfg := openai.Config{
		Model: spec.Model, BaseURL: spec.BaseURL, APIKey: spec.APIKey, APIKeyEnv: spec.APIKeyEnv,
		Temperature: spec.Temperature, MaxTokens: spec.MaxTokens, Timeout: spec.Timeout,
		InputPrice: spec.InputPrice, OutputPrice: spec.OutputPrice,
		TopP: st.TopP, PresencePenalty: st.PresencePenalty, FrequencyPenalty: st.FrequencyPenalty,
		Seed: st.Seed, Stop: st.Stop, ParallelToolCalls: st.ParallelToolCalls,
		ReasoningEffort: st.ReasoningEffort, Headers: st.ExtraHeaders,
	}
	if spec.Provider != "" {
		pr, ok := config.LookupProvider(spec.Provider)
		if !ok {
			return nil, fmt.Errorf("unknown model provider %q", spec.Provider)
		}
		cfg.BaseURL, cfg.APIKey, cfg.APIKeyEnv = providerEndpoint(pr, spec)
	}
	m, err := openai.New(cfg)
	if err != nil {
		return nil, err // not a typed nil in a model.Model
	}
	return m, nil
}

func newAnthropic(spec config.ModelSpec) (model.Model, error) {
	m, err := anthropic.New(anthropic.Config{
		Model: spec.Model, BaseURL: spec.BaseURL, APIKey: spec.APIKey, APIKeyEnv: spec.APIKeyEnv,
		Temperature: spec.Temperature, MaxTokens: spec.MaxTokens, Timeout: spec.Timeout,
		InputPrice: spec.InputPrice, OutputPrice: spec.OutputPrice, Stop: spec.Settings.Stop,
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// providerEndpoint returns the base URL and key of an OpenAI-compatible
// provider's model: what the manifest wrote, else the provider's
// (BaseURLEnv when set in the environment, else its URL; its key
// variable). A local provider whose key variable is unset gets a
// placeholder key, so that OPENAI_API_KEY is never sent to it.
func providerEndpoint(pr config.Provider, spec config.ModelSpec) (baseURL, apiKey, apiKeyEnv string) {
	baseURL, apiKey, apiKeyEnv = spec.BaseURL, spec.APIKey, spec.APIKeyEnv
	if baseURL == "" {
		baseURL = pr.BaseURL
		if v := os.Getenv(pr.BaseURLEnv); pr.BaseURLEnv != "" && v != "" {
			baseURL = v
		}
	}
	if apiKey == "" && apiKeyEnv == "" {
		apiKeyEnv = pr.KeyEnv
		if pr.KeyOptional && os.Getenv(pr.KeyEnv) == "" {
			apiKey, apiKeyEnv = "none", ""
		}
	}
	return baseURL, apiKey, apiKeyEnv
}

// newFallback builds the models of a fallback model, in order.
func newFallback(spec config.ModelSpec) (model.Model, error) {
	models := make([]model.Model, 0, len(spec.Fallback))
	for i, s := range spec.Fallback {
		m, err := NewModel(s)
		if err != nil {
			return nil, fmt.Errorf("fallback model %d: %w", i, err)
		}
		models = append(models, m)
	}
	m, err := fallback.New(models...)
	if err != nil {
		return nil, err
	}
	return m, nil
}
