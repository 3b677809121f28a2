package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// The AgentPool and WolfHarness keys of issue 36, item 5, each in a small
// manifest: the supported ones load into what they mean, the others are
// refused by name with what they are and what to do.

func parseOK(t *testing.T, src string) *Manifest {
	t.Helper()
	m, err := Parse("agentpool.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse:\n%v\nsource:\n%s", err, src)
	}
	return m
}

func TestAnchorHoldersAreIgnored(t *testing.T) {
	m := parseOK(t, `
.shared_model: &model
  type: test
  custom_output_text: Shared.
_meta:
  version: "1.0.0"
x-extra: {a: 1}
agents:
  a:
    model: *model
`)
	if got := m.Agents["a"].Model.CustomOutputText; got != "Shared." {
		t.Errorf("anchor from .shared_model: model text %q", got)
	}
	// Only at the top level: below it such keys are fields like others.
	_, err := Parse("agentpool.yaml", []byte("agents:\n  a:\n    model: test\n    _meta: 1\n"))
	if err == nil || !strings.Contains(err.Error(), `agents.a._meta: unknown field "_meta"`) {
		t.Errorf("_meta under an agent: err = %v", err)
	}
}

func TestSeveralDocumentsAreOneManifest(t *testing.T) {
	m := parseOK(t, `# comments only in the first document
---
agents:
  first: {model: test}
---
agents:
  second: {model: test}
teams:
  both: {mode: parallel, members: [first, second]}
`)
	if !slices.Equal(m.AgentOrder, []string{"first", "second"}) || m.Teams["both"] == nil {
		t.Errorf("agents %v, teams %v", m.AgentOrder, m.TeamOrder)
	}
	if m.Agents["second"].Line != 7 {
		t.Errorf("second agent at line %d, want 7 (lines are the file's)", m.Agents["second"].Line)
	}
}

func TestEmptyAgentsLoadsWithAWarning(t *testing.T) {
	m := parseOK(t, "agents: {}\n")
	if len(m.Agents) != 0 || len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0].Msg, "no agents: AgentPool adds them from code") {
		t.Errorf("agents %v, warnings %v", m.Agents, m.Warnings)
	}
	// Left out or null, agents are still required.
	if _, err := Parse("agentpool.yaml", []byte("agents:\n")); err == nil {
		t.Error("agents: (null) loaded")
	}
}

func TestTestModelWithText(t *testing.T) {
	m := parseOK(t, "agents:\n  a:\n    model: \"test:Hello: world\"\n")
	ms := m.Agents["a"].Model
	if ms.Type != ModelTest || ms.CustomOutputText != "Hello: world" || !ms.CallAllTools {
		t.Errorf("test:TEXT = %+v", ms)
	}
}

func TestOpenAIChatPrefix(t *testing.T) {
	m := parseOK(t, "agents:\n  a:\n    model: openai-chat:gpt-4o-mini\n  b:\n    model: {type: string, identifier: \"openai-chat:gpt-4o\"}\n")
	for name, want := range map[string]string{"a": "gpt-4o-mini", "b": "gpt-4o"} {
		if ms := m.Agents[name].Model; ms.Type != ModelOpenAI || ms.Model != want {
			t.Errorf("%s = %+v", name, ms)
		}
	}
}

func TestPreStreamDelay(t *testing.T) {
	m := parseOK(t, "agents:\n  a:\n    model: {type: test, pre_stream_delay: 1.5}\n")
	if got := m.Agents["a"].Model.PreStreamDelay; got != 1500*time.Millisecond {
		t.Errorf("PreStreamDelay = %v", got)
	}
	_, err := Parse("agentpool.yaml", []byte("agents:\n  a:\n    model: {type: openai, model: gpt-4o-mini, pre_stream_delay: 1}\n"))
	if err == nil || !strings.Contains(err.Error(), `field "pre_stream_delay" does not apply to openai models`) {
		t.Errorf("pre_stream_delay on openai: err = %v", err)
	}
}

func TestModelVariants(t *testing.T) {
	m := parseOK(t, `
model_variants:
  fast:
    type: string
    identifier: openai:gpt-4o-mini
  quiet: "test:Shh."
  again: fast
default_model: quiet
agents:
  a: {model: fast}
  b: {}
  c: {model: again}
`)
	if ms := m.Agents["a"].Model; ms.Type != ModelOpenAI || ms.Model != "gpt-4o-mini" || ms.Line != 10 {
		t.Errorf("a = %+v", ms)
	}
	if ms := m.Agents["b"].Model; ms.Type != ModelTest || ms.CustomOutputText != "Shh." {
		t.Errorf("b (default_model naming a variant) = %+v", ms)
	}
	if ms := m.Agents["c"].Model; ms.Model != "gpt-4o-mini" {
		t.Errorf("c (a variant naming a variant) = %+v", ms)
	}
	_, err := Parse("agentpool.yaml", []byte("model_variants: [a]\nagents:\n  a: {model: test}\n"))
	if err == nil || !strings.Contains(err.Error(), "model_variants: expected a mapping of names to models, got a list") {
		t.Errorf("err = %v", err)
	}
}

func TestToolEntriesEnabledAndTypeless(t *testing.T) {
	m := parseOK(t, `
agents:
  a:
    model: test
    tools:
      - type: bash
        enabled: true
      - type: plan
        enabled: false
      - name: file_access
      - name: fetch
        enabled: false
`)
	if got := toolsetTypesOf(m.Agents["a"]); !slices.Equal(got, []string{ToolsetExecution, ToolsetFileAccess}) {
		t.Errorf("toolsets = %v", got)
	}
	_, err := Parse("agentpool.yaml", []byte("agents:\n  a:\n    model: test\n    tools:\n      - name: search_documentation\n        enabled: true\n"))
	if err == nil || !strings.Contains(err.Error(), `agents.a.tools[0].name: no toolset is named "search_documentation": AgentPool finds a tool of that name among those its Python program registered`) {
		t.Errorf("err = %v", err)
	}
}

func TestAgentCLIIsSubagent(t *testing.T) {
	m := parseOK(t, "agents:\n  a:\n    model: test\n    tools:\n      - type: agent_cli\n")
	if got := toolsetTypesOf(m.Agents["a"]); !slices.Equal(got, []string{ToolsetSubagent}) {
		t.Errorf("toolsets = %v", got)
	}
	if len(m.Warnings) != 1 || !strings.HasPrefix(m.Warnings[0].Msg, "agent_cli is mapped onto the subagent toolset") {
		t.Errorf("warnings = %v", m.Warnings)
	}
}

// TestForeignKeysRefusedByName: each key is refused at its line with a
// message that names it, says what it is and what to do.
func TestForeignKeysRefusedByName(t *testing.T) {
	const agent = "agents:\n  a:\n    model: test\n"
	tests := []struct {
		name, src, field, msg string
	}{
		{"graph", agent + "graph:\n  steps: []\n", "graph", "WolfHarness's graph (steps and edges run as a workflow) is not supported: chain the agents with a sequential team"},
		{"environments", "environments:\n  test: {type: inline}\n" + agent, "environments", "AgentPool's environments (named llmling runtime configurations"},
		{"capabilities list", agent + "    capabilities:\n      - type: viking\n        mode: write\n      - type: tool_display\n", "agents.a.capabilities", "WolfHarness's capabilities (viking, tool_display) are not supported: agentpool has no capability layer"},
		{"system_prompts and system_prompt", agent + "    system_prompt: a\n    system_prompts: [b]\n", "agents.a.system_prompts", "system_prompts is llmling-agent's name of system_prompt, which is set too (line 4): keep one"},
		{"llmling-agent provider", "agents:\n  a:\n    provider: litellm\n", "agents.a.provider", `provider "litellm" (llmling-agent's agent provider) was replaced in AgentPool by type and model`},
		{"llmling-agent callback provider", "agents:\n  a:\n    provider: {type: callback, callback: \"app:fn\"}\n", "agents.a.provider.type", `not supported in a Go runtime: llmling-agent's callback provider calls a Python function`},
		{"unknown capability", agent + "    capabilities: {can_fly: true}\n", "agents.a.capabilities.can_fly", `unknown capability "can_fly"`},
		{"lifecycle", agent + "    lifecycle: {journal: durable}\n", "agents.a.lifecycle", "WolfHarness's lifecycle"},
		{"claude_code option", "agents:\n  c:\n    type: claude_code\n    builtin_tools: [Read]\n", "agents.c.builtin_tools", "builtin_tools is an option of AgentPool's claude_code agents"},
		{"model strategy", "agents:\n  a:\n    model: {type: test, strategy: cheapest}\n", "agents.a.model.strategy", "strategy is an option of llmling-models' multi-model types"},
		{"skills toolset option", agent + "    tools:\n      - {type: skills, max_skills: 3}\n", "agents.a.tools[0].max_skills", "max_skills of the skills toolset is the manifest's skills.instruction.max_skills"},
		{"worker share_context", agent + "    workers:\n      - {name: b, share_context: true}\n  b: {model: test}\n", "agents.a.workers[0].share_context", "share_context is llmling-agent's key; AgentPool and agentpool call it pass_message_history"},
		{"skills.instruction.mode", agent + "skills:\n  instruction: {mode: all}\n", "skills.instruction.mode", "WolfHarness's skills.instruction.mode is skills.instruction.inject"},
		{"prompts.system_prompt", agent + "prompts:\n  system_prompt: {}\n", "prompts.system_prompt", "AgentPool's prompt library is prompts.system_prompts (plural)"},
		{"mcp_servers mapping", agent + "mcp_servers:\n  filesystem: {command: x}\n", "mcp_servers.filesystem", "mcp_servers written as a mapping of names to servers is not read"},
		{"single tool", agent + "    tools: [read]\n", "agents.a.tools[0]", `toolset "read" is not supported: it is one of AgentPool's single file tools`},
		{"simulation toolset", agent + "    toolsets:\n      - type: async_simulation\n", "agents.a.toolsets[0].type", `toolset "async_simulation" is not supported: WolfHarness's simulation toolsets`},
		{"langchain tools", agent + "    tools:\n      - type: langchain\n", "agents.a.tools[0].type", `not supported in a Go runtime: toolset "langchain" loads LangChain's Python tools`},
		{"team strategy", agent + "teams:\n  t: {mode: parallel, members: [a], strategy: parallel}\n", "teams.t.strategy", "strategy is not a key of AgentPool's teams: the key is mode"},
		{"connection target", agent + "    connections:\n      - {type: node, target: a}\n", "agents.a.connections[0].target", "target is llmling-agent's key"},
		{"codex agent", "agents:\n  c:\n    type: codex\n", "agents.c.type", `agent type "codex" is AgentPool's own bridge to codex; agentpool runs codex over ACP: write type: acp with provider: codex`},
		{"bare JSON schema response", agent + "responses:\n  R: {type: object, properties: {}}\n", "responses.R.type", "a response given as a bare JSON schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("agentpool.yaml", []byte(tt.src))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v", err)
			}
			for _, is := range ce.Issues {
				if is.Field == tt.field {
					if !strings.HasPrefix(is.Msg, tt.msg) || bareUnknown(is.Msg) {
						t.Errorf("%s:\n got %s\nwant %s...", is.Field, is.Msg, tt.msg)
					}
					if is.Line == 0 {
						t.Errorf("%s: no line", is.Field)
					}
					return
				}
			}
			t.Errorf("no issue at %s: %v", tt.field, err)
		})
	}
}

// A key none of the projects has stays a plain unknown field.
func TestTyposStayUnknown(t *testing.T) {
	_, err := Parse("agentpool.yaml", []byte("agents:\n  a:\n    model: test\n    capabilties: []\n"))
	if err == nil || !strings.Contains(err.Error(), `agents.a.capabilties: unknown field "capabilties"`) {
		t.Errorf("err = %v", err)
	}
}
