package config

import (
	"slices"
	"testing"
)

// llmling-agent's agent keys: system_prompts and result_type are
// AgentPool's system_prompt and output_type, provider: human is the input
// model, user_prompts are warned about, and the capabilities with
// agentpool tools become toolsets; the others are warned about.
func TestLlmlingAgentKeys(t *testing.T) {
	m := parseOK(t, `responses:
  Result:
    response_schema:
      type: inline
      fields: {answer: {type: str}}
agents:
  base:
    model: test
    system_prompts: ["You answer.", "Briefly."]
    result_type: Result
    user_prompts: ["What is 2+2?"]
  child:
    inherits: base
    capabilities:
      can_delegate_tasks: true
      can_list_agents: true
      can_read_files: true
      can_execute_commands: false
      can_add_agents: true
      history_access: own
  human:
    provider: human
    description: A human who can provide answers
  model_user:
    provider: pydantic_ai
    model: test
    toolsets: [file_access]
    capabilities: {can_list_directories: true}
  provided:
    provider:
      type: pydantic_ai
      model: "test:Hi."
      end_strategy: early
  reviewer:
    provider: {type: human, timeout: 300}
`)
	base := m.Agents["base"]
	if base.SystemPrompt != "You answer.\n\nBriefly." || base.Output == nil {
		t.Errorf("base: prompt %q, output %+v", base.SystemPrompt, base.Output)
	}
	child := m.Agents["child"]
	if child.SystemPrompt != base.SystemPrompt || child.Output == nil {
		t.Errorf("child did not inherit: prompt %q, output %+v", child.SystemPrompt, child.Output)
	}
	var types []string
	for _, ts := range child.Toolsets {
		types = append(types, ts.Type)
		if ts.Type == ToolsetFileAccess && !slices.Equal(ts.Disabled, []string{"Write", "Edit"}) {
			t.Errorf("can_read_files: file_access turns off %v, want Write and Edit", ts.Disabled)
		}
	}
	if !slices.Equal(types, []string{ToolsetSubagent, ToolsetFileAccess}) {
		t.Errorf("child's toolsets %v", types)
	}
	if ms := m.Agents["human"].Model; ms.Type != ModelInput || ms.Human.InputPrompt != DefaultHumanInputPrompt {
		t.Errorf("provider: human gave model %+v", ms)
	}
	if ms := m.Agents["provided"].Model; ms.Type != ModelTest || ms.CustomOutputText != "Hi." {
		t.Errorf("the provider's model gave %+v", ms)
	}
	if ms := m.Agents["reviewer"].Model; ms.Type != ModelInput {
		t.Errorf("provider {type: human} gave model %+v", ms)
	}
	// The agent's own file_access is kept whole.
	if ts := m.Agents["model_user"].Toolsets; len(ts) != 1 || ts[0].Type != ToolsetFileAccess || len(ts[0].Disabled) != 0 {
		t.Errorf("model_user's toolsets %+v", ts)
	}
	diffLines(t, warningLines(m), []string{
		`agentpool.yaml:11: agents.base.user_prompts: ignored: user_prompts are llmling-agent's example prompts for its UI; pass the prompt to agentpool run`,
		`agentpool.yaml:19: agents.child.capabilities: skipped: llmling-agent's can_add_agents (adds agents, and the pool is fixed when built), history_access (searches the conversation history; see agentpool sessions); agentpool has no such tools, and the agent runs without them`,
		`agentpool.yaml:30: agents.provided.provider: ignored: end_strategy of llmling-agent's pydantic_ai provider (the model mapping takes model settings: model: {type: string, identifier: ..., temperature: 0.7})`,
		`agentpool.yaml:35: agents.reviewer.provider: ignored: timeout of llmling-agent's human provider (agentpool waits until the person answers or the run is cancelled)`,
	})
	diffLines(t, parseErr(t, "agents:\n  h:\n    provider: human\n    model: test\n"), []string{
		`agentpool.yaml:3: agents.h.provider: provider: human (a person answers, model: input here) and model (line 4) are both set: keep one`,
	})
}
