package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// wiredOpts are the model types of a program that wired in openai,
// anthropic and one of its own, localllm.
var wiredOpts = Options{ModelTypes: []string{ModelTest, ModelScripted, ModelFallback, ModelOpenAI, ModelAnthropic, "localllm"}}

// parseErrWith parses src with opts, which must fail, and returns the
// error lines.
func parseErrWith(t *testing.T, src string, opts Options) []string {
	t.Helper()
	m, err := ParseWith("agentpool.yaml", []byte(src), opts)
	if err == nil {
		t.Fatalf("ParseWith: expected an error, got manifest %+v", m)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T, want *Error: %v", err, err)
	}
	return strings.Split(err.Error(), "\n")
}

// TestProgramModelTypes: a type the program wires in (Options.ModelTypes)
// parses in every form with the provider keys; Parse without options does
// not know it.
func TestProgramModelTypes(t *testing.T) {
	diffLines(t, parseErr(t, "agents:\n  a:\n    model: localllm:llama3\n"),
		[]string{`agentpool.yaml:3: agents.a.model: unknown model type "localllm" (types: test, scripted, openai, anthropic, fallback, input; providers: openrouter, groq, ollama, deepseek, mistral, together, fireworks, cerebras, xai, gemini, github, moonshotai, cohere, perplexity, requesty, zai, vercel-gateway, lmstudio, as PROVIDER:MODEL)`})
	if got := ModelTypes(); !slices.Equal(got, []string{ModelTest, ModelScripted, ModelOpenAI, ModelAnthropic, ModelFallback, ModelInput}) {
		t.Errorf("ModelTypes = %v", got)
	}

	m, err := ParseWith("agentpool.yaml", []byte(`
agents:
  a: {model: "localllm:llama3"}
  b: {model: localllm}
  c:
    model: {type: localllm, model: qwen, base_url: "http://localhost:11434", temperature: 0.5, max_tokens: 100, input_price: 1}
`), wiredOpts)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "llama3", "b": "", "c": "qwen"} {
		if ms := m.Agents[name].Model; ms.Type != "localllm" || ms.Model != want {
			t.Errorf("agent %s: %+v", name, ms)
		}
	}
	if ms := m.Agents["c"].Model; ms.BaseURL != "http://localhost:11434" || ms.Temperature == nil || ms.MaxTokens != 100 {
		t.Errorf("agent c: %+v", ms)
	}
	diffLines(t, parseErrWith(t, "agents:\n  a:\n    model: {type: localllm, custom_output_text: hi}\n  b:\n    model: {model: x}\n  c:\n    model: {type: openai, model: x, turns: [x]}\n  d:\n    model: {type: test, base_url: x}\n", wiredOpts), []string{
		`agentpool.yaml:3: agents.a.model.custom_output_text: field "custom_output_text" does not apply to localllm models (only to test)`,
		`agentpool.yaml:5: agents.b.model: missing required field "type" (one of test, scripted, openai, anthropic, fallback, localllm, or an identifier such as "openai:gpt-4o-mini")`,
		`agentpool.yaml:7: agents.c.model.turns: field "turns" does not apply to openai models (only to scripted)`,
		`agentpool.yaml:9: agents.d.model.base_url: field "base_url" does not apply to test models (only to openai, anthropic and localllm)`,
	})
	diffLines(t, parseErrWith(t, "agents:\n  a:\n    model: {type: nosuchtype, base_url: x}\n", wiredOpts),
		[]string{`agentpool.yaml:3: agents.a.model.type: unknown model type "nosuchtype" (known: test, scripted, openai, anthropic, fallback, localllm)`})
	diffLines(t, parseErrWith(t, "agents:\n  a:\n    model: {type: localllmm}\n", wiredOpts),
		[]string{`agentpool.yaml:3: agents.a.model.type: unknown model type "localllmm" (did you mean "localllm"?)`})

	for _, bad := range []string{"", "my:type", "1x"} {
		if _, err := ParseWith("agentpool.yaml", []byte("agents:\n  a: {model: test}\n"), Options{ModelTypes: []string{bad}}); err == nil || !strings.Contains(err.Error(), "invalid model type") {
			t.Errorf("ModelTypes [%q]: err = %v", bad, err)
		}
	}
}

// TestUnwiredModelType: a type the parser knows but the program did not
// wire in is an error that lists what is wired and says how to wire one,
// whatever form names it (type, TYPE:MODEL, PROVIDER:MODEL, a fallback's
// model).
func TestUnwiredModelType(t *testing.T) {
	core := Options{ModelTypes: []string{ModelTest, ModelScripted, ModelFallback}}
	src := `agents:
  a: {model: "openai:gpt-4o-mini"}
  b: {model: {type: anthropic, model: claude}}
  c: {model: "groq:llama3"}
  d:
    model:
      type: fallback
      models: [test, "anthropic:claude"]
  e: {model: test}
`
	hint := "; " + WiringHint
	diffLines(t, parseErrWith(t, src, core), []string{
		`agentpool.yaml:2: agents.a.model: model type "openai" is not wired into this program (wired: test, scripted, fallback)` + hint,
		`agentpool.yaml:3: agents.b.model: model type "anthropic" is not wired into this program (wired: test, scripted, fallback)` + hint,
		`agentpool.yaml:4: agents.c.model: model type "openai" (provider "groq") is not wired into this program (wired: test, scripted, fallback)` + hint,
		`agentpool.yaml:8: agents.d.model.models[1]: model type "anthropic" is not wired into this program (wired: test, scripted, fallback)` + hint,
	})
	if _, err := ParseWith("agentpool.yaml", []byte(src), wiredOpts); err != nil {
		t.Errorf("with openai and anthropic wired in: %v", err)
	}
	if _, err := Parse("agentpool.yaml", []byte(src)); err != nil {
		t.Errorf("Parse (syntax only): %v", err)
	}
}
