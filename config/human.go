// The input model (AgentPool's `type: input`): a person answers each turn.

package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// defaultHumanHandler is llmling-models' own input handler, which asks on
// the terminal: what agentpool does too. Any other handler is Python.
const defaultHumanHandler = "llmling_models:DefaultInputHandler"

func defaultHuman() HumanSpec {
	return HumanSpec{PromptTemplate: DefaultHumanPromptTemplate, ShowSystem: true, InputPrompt: DefaultHumanInputPrompt}
}

// humanKeys reads the input model's keys (prompt_template, show_system,
// input_prompt, handler); that they apply to no other type is checked
// with the other keys'.
func (o compatKeys) humanKeys(ms *ModelSpec, get func(string) (*yaml.Node, string, bool)) {
	p := o.p
	if n, fp, ok := get("prompt_template"); ok {
		ms.Human.PromptTemplate = p.str(n, fp)
	}
	if n, fp, ok := get("show_system"); ok {
		ms.Human.ShowSystem = p.boolean(n, fp, true)
	}
	if n, fp, ok := get("input_prompt"); ok {
		ms.Human.InputPrompt = p.str(n, fp)
	}
	if n, fp, ok := get("handler"); ok {
		if h := strings.TrimSpace(p.str(n, fp)); h != "" && h != defaultHumanHandler {
			p.python(n.Line, fp, "input handler %q is a Python import path (agentpool asks on agentpool run's terminal, as llmling-models' default handler does)", h)
		}
	}
}
