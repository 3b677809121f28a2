// External agents: AgentPool's `type: acp` (and `type: claude_code`)
// members, programs that speak the Agent Client Protocol and that
// agentpool drives as their client (package external/acpagent).

package config

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// External agent types.
const (
	AgentACP        = "acp"
	AgentClaudeCode = "claude_code" // the claude preset of AgentACP
	// AgentA2A is a remote agent reached over the Agent2Agent protocol
	// (package external/a2aagent): ExternalAgent.A2A.
	AgentA2A = "a2a"
)

// ExternalAgent is an agent of `type: acp`: the program to start and what
// it may do. Its Agent has no model; its Description, DisplayName and
// SystemPrompt are the Agent's, and so are its Toolsets and Workers
// (`tools:`, `toolsets:`, `workers:`: served to the program over MCP) and
// its MCPServers (`mcp_servers:`: passed to the program, which starts or
// reaches them itself).
type ExternalAgent struct {
	Provider string // a preset (ACPPresets) or "custom"
	Command  string // the preset's, or `command:`
	Args     []string
	// Install says how to install Command, for the error when it is
	// missing.
	Install string
	// Cwd is `cwd:` as written (relative: to the manifest's directory;
	// see Manifest.ResolvePath); empty: the pool's workspace.
	Cwd string
	Env map[string]string
	// RequiresToolConfirmation is always (the default) or never.
	RequiresToolConfirmation string
	AllowFileOperations      bool // default true
	AllowTerminal            bool // default true: terminal/* is served (by the Bash tool)
	RegistryID               string
	// InitTimeout bounds the program's start and its initialize answer;
	// CancelGrace is how long a cancelled prompt may take to answer
	// before the program is killed (`init_timeout`, `cancel_grace`; 0:
	// the defaults of package external/acpagent).
	InitTimeout, CancelGrace time.Duration
	// A2A, when set, makes the agent a remote A2A agent (`type: a2a`);
	// none of the fields above apply to it but CancelGrace.
	A2A *A2ARemote
	// AGUI, when set, makes the agent a remote AG-UI agent (`type:
	// agui`); none of the fields above apply to it.
	AGUI *AGUIRemote
}

// ACPPreset is how to start one of the known ACP agents.
type ACPPreset struct {
	Command string
	Args    []string
	Install string // how to install the command
}

// ACPPresets are the `provider:` values of `type: acp` besides custom and
// registry.
var ACPPresets = map[string]ACPPreset{
	"claude":   {Command: "claude-agent-acp", Install: "npm install -g @agentclientprotocol/claude-agent-acp"},
	"codex":    {Command: "codex-acp", Install: "npm install -g @zed-industries/codex-acp"},
	"opencode": {Command: "opencode", Args: []string{"acp"}, Install: "npm install -g opencode-ai"},
	"goose":    {Command: "goose", Args: []string{"acp"}, Install: "install the goose CLI (Block's goose)"},
	"gemini":   {Command: "gemini", Args: []string{"--experimental-acp"}, Install: "npm install -g @google/gemini-cli"},
}

// registryPresets are the `registry_id:` values of `provider: registry`
// (the ACP agent registry's ids) that agentpool knows how to start.
var registryPresets = map[string]string{
	"claude-agent-acp": "claude", "claude-code-acp": "claude", "codex-acp": "codex",
	"opencode": "opencode", "goose": "goose", "gemini": "gemini", "gemini-cli": "gemini",
}

// externalKeys are the keys of an external agent agentpool reads;
// externalIgnored are the AgentPool keys it accepts with a warning (the
// settings of one agent program, or of AgentPool's execution
// environments).
var (
	externalKeys = []string{
		"type", "provider", "command", "args", "cwd", "env", "system_prompt", "requires_tool_confirmation",
		"allow_file_operations", "allow_terminal", "description", "display_name", "name", "registry_id",
		"tools", "toolsets", "workers", "mcp_servers", "init_timeout", "cancel_grace",
	}
	externalIgnored = []string{
		"model", "auto_approve", "sandbox_permissions", "shell_environment_policy_inherit", "permission_mode",
		"execution_environment", "client_execution_environment",
		"config_file_path", "inherits", "max_turns", "max_budget_usd", "allowed_tools", "disallowed_tools",
	}
)

// external reads an agent of `type: acp` or `type: claude_code`.
func (p *parser) external(a *Agent, kind string, e entry, path string) {
	if kind == AgentA2A {
		p.a2aAgent(a, e, path)
		return
	}
	if kind == AgentAGUI {
		p.aguiAgent(a, e, path)
		return
	}
	f, ok := p.object(e.val, path, append(slices.Clip(externalKeys), externalIgnored...))
	if !ok {
		return
	}
	x := &ExternalAgent{RequiresToolConfirmation: "always", AllowFileOperations: true, AllowTerminal: true}
	a.External = x
	if fe, ok := f["description"]; ok {
		a.Description = p.str(fe.val, path+".description")
	}
	for _, k := range []string{"name", "display_name"} {
		if fe, ok := f[k]; ok {
			a.DisplayName = p.str(fe.val, join(path, k))
		}
	}
	if fe, ok := f["system_prompt"]; ok {
		a.SystemPrompt = p.prompt(fe.val, path+".system_prompt")
	}
	if fe, ok := f["cwd"]; ok {
		x.Cwd = p.str(fe.val, path+".cwd")
	}
	if fe, ok := f["env"]; ok {
		x.Env = p.stringMap(fe.val, path+".env")
	}
	if fe, ok := f["requires_tool_confirmation"]; ok {
		if v, ok := p.word(fe.val, path+".requires_tool_confirmation"); ok {
			if v != "always" && v != "never" {
				p.add(fe.val.Line, path+".requires_tool_confirmation", "unknown value %q (always or never)", v)
			} else {
				x.RequiresToolConfirmation = v
			}
		}
	}
	if fe, ok := f["allow_file_operations"]; ok {
		x.AllowFileOperations = p.boolean(fe.val, path+".allow_file_operations", true)
	}
	if fe, ok := f["allow_terminal"]; ok {
		x.AllowTerminal = p.boolean(fe.val, path+".allow_terminal", true)
	}
	if fe, ok := f["init_timeout"]; ok {
		x.InitTimeout = p.duration(fe.val, path+".init_timeout")
	}
	if fe, ok := f["cancel_grace"]; ok {
		x.CancelGrace = p.duration(fe.val, path+".cancel_grace")
	}
	p.agentTools(a, f, path)
	if fe, ok := f["mcp_servers"]; ok {
		a.MCPServers = p.mcpServers(fe.val, path+".mcp_servers")
	}
	for _, k := range externalIgnored {
		if fe, ok := f[k]; ok && !empty(fe.val) {
			p.warn(fe.line(), join(path, k), "ignored: agentpool starts the agent program with its preset command and passes no %s to it", k)
		}
	}
	p.externalCommand(x, kind, f, e, path)
}

// externalCommand sets the command of x from its provider (a preset,
// registry with registry_id, or custom with command and args).
func (p *parser) externalCommand(x *ExternalAgent, kind string, f map[string]entry, e entry, path string) {
	x.Provider = "claude"
	if kind == AgentACP {
		pe, ok := f["provider"]
		if !ok {
			p.add(e.line(), path, "missing required field \"provider\" (%s, registry or custom)", strings.Join(presetNames(), ", "))
			return
		}
		if x.Provider, ok = p.word(pe.val, path+".provider"); !ok {
			return
		}
	} else if pe, ok := f["provider"]; ok {
		p.add(pe.line(), path+".provider", "type claude_code takes no provider: it is the claude preset of type acp")
	}
	if x.Provider == "registry" {
		re, ok := f["registry_id"]
		if !ok {
			p.add(e.line(), path, "missing required field \"registry_id\" (provider registry)")
			return
		}
		x.RegistryID, _ = p.word(re.val, path+".registry_id")
		preset, known := registryPresets[x.RegistryID]
		if !known && x.RegistryID != "" {
			p.add(re.val.Line, path+".registry_id", "unknown registry id %q (known: %s); or use provider: custom with command and args", x.RegistryID, strings.Join(slices.Sorted(maps.Keys(registryPresets)), ", "))
			return
		}
		x.Provider = preset
	} else if re, ok := f["registry_id"]; ok {
		p.add(re.line(), path+".registry_id", "registry_id needs provider: registry")
	}
	if x.Provider == "custom" {
		ce, ok := f["command"]
		if !ok {
			p.add(e.line(), path, "missing required field \"command\" (provider custom)")
			return
		}
		x.Command = p.requiredStr(ce.val, path+".command")
		if ae, ok := f["args"]; ok {
			for i, c := range p.list(ae.val, path+".args") {
				x.Args = append(x.Args, p.str(c, index(path+".args", i)))
			}
		}
		return
	}
	preset, ok := ACPPresets[x.Provider]
	if !ok {
		pe := f["provider"]
		p.add(pe.val.Line, path+".provider", "unknown ACP provider %q%s", x.Provider, orKnown(x.Provider, append(presetNames(), "registry", "custom")))
		return
	}
	for _, k := range []string{"command", "args"} {
		if fe, ok := f[k]; ok {
			p.add(fe.line(), join(path, k), "%s is for provider custom; provider %s starts %s", k, x.Provider, strings.Join(append([]string{preset.Command}, preset.Args...), " "))
		}
	}
	x.Command, x.Args, x.Install = preset.Command, slices.Clone(preset.Args), preset.Install
}

func presetNames() []string { return slices.Sorted(maps.Keys(ACPPresets)) }

// externalKind reports whether kind is an external agent type agentpool
// runs.
func externalKind(kind string) bool {
	return kind == AgentACP || kind == AgentClaudeCode || kind == AgentA2A || kind == AgentAGUI
}
