package config

import (
	"slices"
	"testing"
)

// registerModelType registers typ for the test only.
func registerModelType(t *testing.T, typ string) {
	t.Helper()
	RegisterModelType(typ)
	t.Cleanup(func() {
		r := &registeredModelTypes
		r.Lock()
		r.names = slices.DeleteFunc(r.names, func(s string) bool { return s == typ })
		r.Unlock()
	})
}

func TestRegisterModelType(t *testing.T) {
	diffLines(t, parseErr(t, "agents:\n  a:\n    model: localllm:llama3\n"),
		[]string{`agentpool.yaml:3: agents.a.model: unknown model type "localllm" (types: test, scripted, openai, anthropic, fallback; providers: openrouter, groq, ollama, deepseek, mistral, together, fireworks, cerebras, xai, gemini, github, moonshotai, cohere, perplexity, requesty, zai, vercel-gateway, lmstudio, as PROVIDER:MODEL)`})

	registerModelType(t, "localllm")
	RegisterModelType(ModelOpenAI) // builtin: nothing changes
	if got := ModelTypes(); !slices.Equal(got, []string{ModelTest, ModelScripted, ModelOpenAI, ModelAnthropic, ModelFallback, "localllm"}) {
		t.Errorf("ModelTypes = %v", got)
	}
	m := mustParse(t, `
agents:
  a: {model: "localllm:llama3"}
  b: {model: localllm}
  c:
    model: {type: localllm, model: qwen, base_url: "http://localhost:11434", temperature: 0.5, max_tokens: 100, input_price: 1}
`)
	for name, want := range map[string]string{"a": "llama3", "b": "", "c": "qwen"} {
		if ms := m.Agents[name].Model; ms.Type != "localllm" || ms.Model != want {
			t.Errorf("agent %s: %+v", name, ms)
		}
	}
	if ms := m.Agents["c"].Model; ms.BaseURL != "http://localhost:11434" || ms.Temperature == nil || ms.MaxTokens != 100 {
		t.Errorf("agent c: %+v", ms)
	}
	diffLines(t, parseErr(t, "agents:\n  a:\n    model: {type: localllm, custom_output_text: hi}\n  b:\n    model: {model: x}\n  c:\n    model: {type: openai, model: x, turns: [x]}\n  d:\n    model: {type: test, base_url: x}\n"), []string{
		`agentpool.yaml:3: agents.a.model.custom_output_text: field "custom_output_text" does not apply to localllm models (only to test)`,
		`agentpool.yaml:5: agents.b.model: missing required field "type" (one of test, scripted, openai, anthropic, fallback, localllm, or an identifier such as "openai:gpt-4o-mini")`,
		`agentpool.yaml:7: agents.c.model.turns: field "turns" does not apply to openai models (only to scripted)`,
		`agentpool.yaml:9: agents.d.model.base_url: field "base_url" does not apply to test models (only to openai, anthropic and localllm)`,
	})
	diffLines(t, parseErr(t, "agents:\n  a:\n    model: {type: nosuchtype, base_url: x}\n"),
		[]string{`agentpool.yaml:3: agents.a.model.type: unknown model type "nosuchtype" (known: test, scripted, openai, anthropic, fallback, localllm)`})
	diffLines(t, parseErr(t, "agents:\n  a:\n    model: {type: localllmm}\n"),
		[]string{`agentpool.yaml:3: agents.a.model.type: unknown model type "localllmm" (did you mean "localllm"?)`})

	for _, bad := range []string{"", "my:type", "1x"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterModelType(%q) did not panic", bad)
				}
			}()
			RegisterModelType(bad)
		}()
	}
}
