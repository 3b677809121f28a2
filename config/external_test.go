package config

import (
	"strings"
	"testing"
	"time"
)

// The AgentPool fields of external agents: each preset's command, custom
// commands, the registry ids, claude_code as the claude preset, and the
// defaults of AgentPool (files and terminal allowed, confirmation always).
func TestExternalAgents(t *testing.T) {
	m, err := Parse("agentpool.yaml", []byte(`
agents:
  oc:
    type: acp
    provider: opencode
    display_name: OpenCode
    description: codes
    cwd: work
    env: {A: b}
    system_prompt: [be brief, be right]
  cc: {type: claude_code, requires_tool_confirmation: never, allow_terminal: false}
  gem: {type: acp, provider: gemini, allow_file_operations: false}
  goose: {type: acp, provider: goose, init_timeout: 3m, cancel_grace: 500ms}
  codex: {type: acp, provider: registry, registry_id: codex-acp}
  mine: {type: acp, provider: custom, command: ./my-agent, args: [--acp]}
teams:
  pair: {mode: parallel, members: [oc, cc]}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"oc": "opencode acp", "cc": "claude-agent-acp", "gem": "gemini --experimental-acp", "goose": "goose acp", "codex": "codex-acp", "mine": "./my-agent --acp"}
	for name, cmd := range want {
		x := m.Agents[name].External
		if x == nil {
			t.Fatalf("%s: not external", name)
		}
		if got := joinCmd(x.Command, x.Args); got != cmd {
			t.Errorf("%s: command %q, want %q", name, got, cmd)
		}
	}
	oc := m.Agents["oc"]
	if oc.DisplayName != "OpenCode" || oc.Description != "codes" || oc.SystemPrompt != "be brief\n\nbe right" || oc.External.Cwd != "work" || oc.External.Env["A"] != "b" ||
		oc.External.RequiresToolConfirmation != "always" || !oc.External.AllowFileOperations || !oc.External.AllowTerminal || oc.External.Install != "npm install -g opencode-ai" {
		t.Errorf("oc = %+v, external %+v", oc, oc.External)
	}
	if cc := m.Agents["cc"].External; cc.Provider != "claude" || cc.RequiresToolConfirmation != "never" || cc.AllowTerminal {
		t.Errorf("cc = %+v", cc)
	}
	if g := m.Agents["gem"].External; g.AllowFileOperations {
		t.Errorf("gem = %+v", g)
	}
	if c := m.Agents["codex"].External; c.Provider != "codex" || c.RegistryID != "codex-acp" {
		t.Errorf("codex = %+v", c)
	}
	if g := m.Agents["goose"].External; g.InitTimeout != 3*time.Minute || g.CancelGrace != 500*time.Millisecond {
		t.Errorf("goose's init_timeout %v, cancel_grace %v", g.InitTimeout, g.CancelGrace)
	}
	if o := m.Agents["oc"].External; o.InitTimeout != 0 || o.CancelGrace != 0 {
		t.Errorf("oc's init_timeout %v, cancel_grace %v, want the defaults (0)", o.InitTimeout, o.CancelGrace)
	}
	_, err = Parse("agentpool.yaml", []byte("agents:\n  x: {type: acp, provider: goose, cancel_grace: soon}\n"))
	if err == nil || !strings.Contains(err.Error(), "agentpool.yaml:2") || !strings.Contains(err.Error(), "agents.x.cancel_grace") || !strings.Contains(err.Error(), `invalid duration "soon"`) {
		t.Errorf("a bad cancel_grace: %v", err)
	}
}

func joinCmd(c string, args []string) string {
	out := c
	for _, a := range args {
		out += " " + a
	}
	return out
}

// An external agent's toolsets, workers and MCP servers are read as a
// native agent's (they are served to, or passed to, its program), with
// the same checks.
func TestExternalAgentTools(t *testing.T) {
	m, err := Parse("agentpool.yaml", []byte(`
agents:
  helper: {model: test}
  oc:
    type: acp
    provider: opencode
    tools: [file_access, {type: workers, workers: [helper]}]
    toolsets: [subagent]
    mcp_servers:
      - {name: git, type: stdio, command: git-mcp}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) > 0 {
		t.Errorf("warnings %v", m.Warnings)
	}
	oc := m.Agents["oc"]
	if len(oc.Toolsets) != 2 || oc.Toolsets[0].Type != ToolsetFileAccess || oc.Toolsets[1].Type != ToolsetSubagent {
		t.Errorf("toolsets %+v", oc.Toolsets)
	}
	if len(oc.Workers) != 1 || oc.Workers[0].Name != "helper" {
		t.Errorf("workers %+v", oc.Workers)
	}
	if len(oc.MCPServers) != 1 || oc.MCPServers[0].Name != "git" || oc.MCPServers[0].Command != "git-mcp" {
		t.Errorf("mcp servers %+v", oc.MCPServers)
	}
	_, err = Parse("agentpool.yaml", []byte(`
agents:
  oc:
    type: acp
    provider: opencode
    workers: [ghost]
    tools: [no_such_toolset]
`))
	if err == nil || !strings.Contains(err.Error(), `agents.oc.workers[0]: unknown agent or team "ghost"`) ||
		!strings.Contains(err.Error(), `no toolset is named "no_such_toolset"`) {
		t.Errorf("err = %v", err)
	}
}
