package config

import (
	"testing"
)

// AgentPool's input model, in both forms, with its keys and defaults;
// a handler of its own is Python, and the keys belong to it alone.
func TestInputModel(t *testing.T) {
	m := parseOK(t, `agents:
  human:
    model:
      type: input
    description: "A human who can provide answers"
  reviewer:
    model: {type: input, prompt_template: "Review: {prompt}", show_system: false, input_prompt: "> ", handler: "llmling_models:DefaultInputHandler"}
  short:
    model: input
`)
	def := HumanSpec{PromptTemplate: DefaultHumanPromptTemplate, ShowSystem: true, InputPrompt: DefaultHumanInputPrompt}
	for _, name := range []string{"human", "short"} {
		if ms := m.Agents[name].Model; ms.Type != ModelInput || ms.Human != def {
			t.Errorf("%s: model %s, %+v", name, ms.Type, ms.Human)
		}
	}
	if h := m.Agents["reviewer"].Model.Human; h != (HumanSpec{PromptTemplate: "Review: {prompt}", InputPrompt: "> "}) {
		t.Errorf("reviewer: %+v", h)
	}
	diffLines(t, parseErr(t, "agents:\n  a: {model: \"input:me\"}\n  b: {model: {type: input, handler: \"app:Ask\"}}\n  c: {model: {type: test, input_prompt: \"> \"}}\n"), []string{
		`agentpool.yaml:2: agents.a.model: the input model takes no model id: write "input" (a person answers each turn)`,
		`agentpool.yaml:3: agents.b.model.handler: not supported in a Go runtime: input handler "app:Ask" is a Python import path (agentpool asks on agentpool run's terminal, as llmling-models' default handler does), and agentpool cannot load or run Python code`,
		`agentpool.yaml:4: agents.c.model.input_prompt: field "input_prompt" does not apply to test models (only to input)`,
	})
}
