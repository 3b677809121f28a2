// Keys of AgentPool, its fork WolfHarness and its predecessor llmling-agent
// that agentpool does not read: each is refused by name, with what it is
// there and what to do here, instead of a bare "unknown field" (which is
// kept for keys none of those projects has, typos mostly).

package config

import (
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// keyContext names where a mapping sits, for the tables below: "top",
// "agent", "team", "model", "toolset", "worker", "prompts", "skills",
// "skills.instruction", "storage", "response", "connection",
// "output_type", "mcp_servers", or "" for anywhere else.
func keyContext(path string) string {
	if path == "" {
		return "top"
	}
	for _, c := range contextPatterns() {
		if c.re.MatchString(path) {
			return c.name
		}
	}
	return ""
}

type contextPattern struct {
	name string
	re   *regexp.Regexp
}

// Compiled on first use (see nameRE).
var contextPatterns = sync.OnceValue(func() []contextPattern {
	return []contextPattern{
		{"agent", regexp.MustCompile(`^agents\.[^.\[]+$`)},
		{"team", regexp.MustCompile(`^teams\.[^.\[]+$`)},
		{"model", regexp.MustCompile(`(^|\.)(model|default_model)$|\.models\[\d+\]$|^model_variants\.[^.\[]+$`)},
		{"toolset", regexp.MustCompile(`\.(tools|toolsets)\[\d+\]$`)},
		{"worker", regexp.MustCompile(`\.workers\[\d+\]$`)},
		{"connection", regexp.MustCompile(`\.connections\[\d+\]$`)},
		{"output_type", regexp.MustCompile(`\.output_type$`)},
		{"response", regexp.MustCompile(`^responses\.[^.\[]+$`)},
		{"prompts", regexp.MustCompile(`^prompts$`)},
		{"skills", regexp.MustCompile(`^skills$`)},
		{"skills.instruction", regexp.MustCompile(`^skills\.instruction$`)},
		{"storage", regexp.MustCompile(`^storage$`)},
		{"mcp_servers", regexp.MustCompile(`(^|\.)mcp_servers$`)},
	}
})

// Shared texts of the tables.
const (
	claudeCodeKey = "is an option of AgentPool's claude_code agents (the Claude Agent SDK's); agentpool drives Claude Code over ACP (docs/external-agents.md), which takes no such option: remove it"
	aguiKey       = "is a key of AgentPool's AG-UI agents: write type: agui to reach a remote AG-UI agent (docs/agentpool-compat.md)"
	modelSetting  = "model settings belong in the model mapping in AgentPool and here: model: {type: string, identifier: \"openai:gpt-4o-mini\", temperature: 0.7, max_tokens: 2000}"
	multiModel    = "is an option of llmling-models' multi-model types (cost-optimized, token-optimized, delegation), which AgentPool dropped and agentpool does not support: name one model, or list several under {type: fallback, models: [...]}"
)

// foreignKeys maps a context (keyContext) and a key to why agentpool
// refuses it. docs/agentpool-compat.md lists them.
var foreignKeys = map[string]map[string]string{
	"top": {
		"graph":          "WolfHarness's graph (steps and edges run as a workflow) is not supported: chain the agents with a sequential team (teams: {NAME: {mode: sequential, members: [...]}}) or with connections",
		"environments":   "AgentPool's environments (named llmling runtime configurations that import Python modules) are not supported in a Go runtime: remove them, and the agents' environment keys",
		"host":           "host (providers and model aliases) is from WolfHarness's RFC-0050 draft, which no release reads: name models under model_variants and give provider keys in the environment (docs/providers.md)",
		"tools":          "top-level tools (what AgentPool's pool MCP server exposes) are not supported: agentpool serves pools over ACP, AG-UI and OpenCode; list the toolsets under an agent's tools",
		"toolsets":       "top-level toolsets (what AgentPool's pool MCP server exposes) are not supported: agentpool serves pools over ACP, AG-UI and OpenCode; list the toolsets under an agent's toolsets",
		"system_prompts": "system_prompts is llmling-agent's prompt library; AgentPool and agentpool read it under prompts: prompts: {system_prompts: {NAME: {content: ...}}}",
		"providers":      "top-level providers are not a key of AgentPool or WolfHarness: give each model its provider (openai:gpt-4o-mini, or {type: openai, model, base_url})",
	},
	"agent": {
		"system_prompts":                "system_prompts is llmling-agent's key (AgentPool's predecessor); AgentPool and agentpool call it system_prompt: rename it",
		"user_prompts":                  "user_prompts (llmling-agent's example prompts for its UI) are not used by AgentPool or agentpool: remove them and pass the prompt to agentpool run",
		"provider":                      "provider (llmling-agent's agent provider: pydantic_ai, human, litellm, callback) was replaced in AgentPool by type and model: remove it and set model (a human provider has no agentpool equivalent)",
		"result_type":                   "result_type is llmling-agent's name for AgentPool's output_type: rename it (see docs/agentpool-compat.md, \"Structured output\")",
		"result_tool_name":              "result_tool_name belongs to the response in AgentPool: move it into the response under responses: (or the agent's output_type mapping)",
		"result_tool_description":       "result_tool_description belongs to the response in AgentPool: move it into the response under responses: (or the agent's output_type mapping)",
		"lifecycle":                     "WolfHarness's lifecycle (durable journals, snapshots and recovery) is not supported: remove it; agentpool keeps every session in its store (continue one with agentpool run --session ID)",
		"model_settings":                "model_settings is llmling-agent's key; " + modelSetting,
		"temperature":                   "an agent-level temperature is not a key of AgentPool: " + modelSetting,
		"max_tokens":                    "an agent-level max_tokens is not a key of AgentPool: " + modelSetting,
		"instructions":                  "WolfHarness's instructions (instruction providers) are not supported: put the text in system_prompt",
		"session_end_policy":            "WolfHarness's session_end_policy (cancel, keep or notify background tasks when a session ends) is not supported: remove it",
		"skills_injection":              "WolfHarness's per-agent skills_injection is not supported: set skills.instruction.inject for the manifest (it applies to every agent)",
		"proxy_chain":                   "WolfHarness's ACP proxy_chain is not supported: remove it (put context in system_prompt; skills come from the manifest's skills)",
		"debug":                         "llmling-agent's debug flag is not used: remove it (agentpool validate and the run's event stream show what an agent does)",
		"metadata":                      "agent metadata is not read by agentpool: move it under a key starting with x- (ignored at every level)",
		"storage":                       "agent-level storage (WolfHarness) is not supported: agentpool keeps the pool's sessions in one store, the manifest's storage",
		"timeout":                       "an agent-level timeout is not a key of AgentPool: set the model's timeout (model: {type: string, identifier: ..., timeout: 30})",
		"builtin_tools":                 "builtin_tools " + claudeCodeKey,
		"use_subscription":              "use_subscription " + claudeCodeKey,
		"auto_grant_permissions":        "auto_grant_permissions " + claudeCodeKey + " (requires_tool_confirmation: never is agentpool's)",
		"env_vars":                      "env_vars " + claudeCodeKey + " (env is agentpool's)",
		"max_thinking_tokens":           "max_thinking_tokens " + claudeCodeKey,
		"include_builtin_system_prompt": "include_builtin_system_prompt " + claudeCodeKey,
		"output_type":                   "structured output (output_type) is read for native agents only: an external agent's answer is its text",
		"environment":                   unsupported["environment"],
		"endpoint":                      "endpoint " + aguiKey,
		"startup_command":               "startup_command " + aguiKey,
		"startup_delay":                 "startup_delay " + aguiKey,
	},
	"team": {
		"strategy": "strategy is not a key of AgentPool's teams: the key is mode (parallel or sequential)",
	},
	"model": {
		"strategy":       "strategy " + multiModel,
		"max_input_cost": "max_input_cost " + multiModel,
		"model_name":     "model_name is llmling-models' key; AgentPool and agentpool write the model as identifier (\"provider:model\"), or model with type openai or anthropic",
		"config":         "config (an aisuite client's configuration) is llmling-models'; aisuite models are not supported: use identifier \"provider:model\"",
		"name":           "a model's name is not read by AgentPool or agentpool: remove it (name a reusable model under model_variants)",
		"description":    "a model's description is not read by AgentPool or agentpool: remove it",
	},
	"toolset": {
		"injection_mode": "WolfHarness's injection_mode of the skills toolset is the manifest's skills.instruction.inject in AgentPool and here: move it there",
		"max_skills":     "max_skills of the skills toolset is the manifest's skills.instruction.max_skills in AgentPool and here: move it there",
		"agents":         "a subagent toolset limited to some agents is not supported: the subagent tools reach every agent and team of the pool (list the allowed ones in the agent's workers instead)",
	},
	"worker": {
		"share_context": "share_context is llmling-agent's key; AgentPool and agentpool call it pass_message_history: rename it",
	},
	"connection": {
		"target": "target is llmling-agent's key; AgentPool and agentpool name the node a connection forwards to with name: connections: [{type: node, name: TARGET}]",
	},
	"output_type": {
		"type":   "an inline output_type is a response in AgentPool: write output_type: {response_schema: {type: inline, fields: {...}}}",
		"fields": "an inline output_type is a response in AgentPool: write output_type: {response_schema: {type: inline, fields: {...}}}",
	},
	"response": {
		"type":        "a response given as a bare JSON schema (a Claude Code or Codex agent's output schema) is written here as response_schema: {type: json_schema, schema: {type: object, properties: {...}}}",
		"properties":  "a response given as a bare JSON schema (a Claude Code or Codex agent's output schema) is written here as response_schema: {type: json_schema, schema: {type: object, properties: {...}}}",
		"import_path": "",
	},
	"prompts": {
		"system_prompt": "AgentPool's prompt library is prompts.system_prompts (plural): rename system_prompt to system_prompts",
	},
	"skills": {
		"injection_mode": "WolfHarness's skills.injection_mode is skills.instruction.inject in AgentPool and here (description or all): move it there",
	},
	"skills.instruction": {
		"mode": "WolfHarness's skills.instruction.mode is skills.instruction.inject in AgentPool and here (description or all): rename it",
	},
	"storage": {
		"log_tool_calls": "llmling-agent's storage.log_tool_calls is not an AgentPool key: remove it; agentpool keeps every tool call in the session's event log (agentpool sessions events ID)",
	},
}

// foreignKey returns why the key of a mapping at path is refused, when it
// is one of AgentPool's, WolfHarness's or llmling-agent's; ok is false for
// a key none of them has.
func foreignKey(path, key string, val *yaml.Node) (msg string, ok bool) {
	ctx := keyContext(path)
	if ctx == "agent" && key == "capabilities" {
		return capabilitiesMessage(val), true
	}
	if ctx == "response" && key == "import_path" {
		return pythonMessage(describe(val) + " is a Python import path"), true
	}
	if ctx == "mcp_servers" {
		return "mcp_servers written as a mapping of names to servers is not read: write a list, - {name: " + key + ", type: stdio, command: ...}, or {config: .mcp.json}", true
	}
	msg, ok = foreignKeys[ctx][key]
	return msg, ok && msg != ""
}

func pythonMessage(what string) string {
	return strings.Replace(pythonOnly, "%s", what, 1)
}

// capabilitiesMessage refuses an agent's capabilities: WolfHarness's list
// of capability configurations, or llmling-agent's mapping of can_* flags
// (which AgentPool replaced by toolsets).
func capabilitiesMessage(val *yaml.Node) string {
	d := deref(val)
	if d != nil && d.Kind == yaml.MappingNode {
		return "capabilities (llmling-agent's can_delegate_tasks, can_list_agents, can_read_files, history_access, ...) became toolsets in AgentPool: list them under tools, e.g. [subagent, file_access, execution]"
	}
	var types []string
	if d != nil && d.Kind == yaml.SequenceNode {
		for _, c := range d.Content {
			if t := findKey(c, "type"); t != nil && deref(t).Kind == yaml.ScalarNode && !slices.Contains(types, deref(t).Value) {
				types = append(types, deref(t).Value)
			}
		}
	}
	what := "WolfHarness's capabilities"
	if len(types) > 0 {
		what += " (" + strings.Join(types, ", ") + ")"
	}
	return what + " are not supported: agentpool has no capability layer; a memory or tool server with an MCP interface goes under the agent's mcp_servers, a token budget is the agent's budget, and tool renaming, display and context pruning have no equivalent (remove them)"
}
