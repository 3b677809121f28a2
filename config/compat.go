// AgentPool compatibility: the manifest keys of AgentPool (the Python
// project whose manifests agentpool loads unchanged) that agentpool
// accepts, maps, warns about or refuses, and the shared wording of those
// answers. docs/agentpool-compat.md is the table of every key.

package config

import (
	"fmt"
	"strings"
)

// pythonOnly is the one-line error of AgentPool features that load or run
// Python code: a Go runtime has no interpreter to import it into. The %s
// says what the key holds ("\"os.listdir\" is a Python import path").
const pythonOnly = "not supported in a Go runtime: %s, and agentpool cannot load or run Python code"

// python reports an AgentPool value that needs Python.
func (p *parser) python(line int, path, what string, args ...any) {
	p.add(line, path, pythonOnly, fmt.Sprintf(what, args...))
}

// AgentPool keys accepted on agents besides agentpool's own; each is
// mapped, ignored or refused by agentCompat.
var agentPoolAgentKeys = []string{
	"type", "name", "display_name", "inherits", "output_type", "output_retries", "connections",
	"requires_tool_confirmation", "retries", "end_strategy", "avatar", "model_providers",
	"usage_limits", "session", "event_handlers", "config_file_path",
	"triggers", "knowledge", "environment", "tool_mode", "hooks", "input_provider", "team_mode",
}

// AgentPool keys accepted on teams besides agentpool's own.
var agentPoolTeamKeys = []string{
	"name", "display_name", "team_mode", "connections", "event_handlers", "config_file_path",
	"triggers", "input_provider", "mcp_servers",
}

// AgentPool top-level keys besides agentpool's own (INHERIT is resolved
// before parsing).
var agentPoolTopKeys = []string{
	"name", "default_model", "responses", "prompts", "observability", "skills", "config_file_path",
	"resources", "conversion", "jobs", "pool_server", "commands", "compaction", "file_agents", "team_mode",
	"model_variants",
}

// unsupported maps keys agentpool refuses to why, so that the error says
// what to do instead of only "unknown field".
var unsupported = map[string]string{
	"triggers":    "event triggers (schedules, file watchers) are not supported: agentpool runs a node when asked (agentpool run, a protocol server, a delegation)",
	"knowledge":   "knowledge sources are not supported: put the text in system_prompt, or give the agent the file_access toolset",
	"environment": "execution environments (docker, e2b, ssh, ...) are not supported: the file and shell tools act in the workspace",
	"hooks":       "agent-level hooks are not supported: list Claude Code settings files under the manifest's hooks.settings",
}

// ignoredTop are top-level AgentPool keys that configure features outside
// what an agent does (resource filesystems, document conversion, the MCP
// pool server, slash commands, history compaction, jobs): accepted with a
// warning, because leaving them out changes no run.
var ignoredTop = map[string]string{
	"resources":   "resource filesystems are not used by agentpool",
	"conversion":  "document conversion is not used by agentpool",
	"jobs":        "jobs are not used by agentpool",
	"pool_server": "agentpool serves pools with `agentpool serve acp|agui|opencode`, not a pool MCP server",
	"commands":    "slash commands are not used by agentpool",
	"compaction":  "history compaction is not used by agentpool: each delegated run starts a fresh session",
}

// warn records a warning: an accepted key that changes nothing.
func (p *parser) warn(line int, field, format string, args ...any) {
	n := len(p.issues)
	p.add(line, field, format, args...)
	p.warnings = append(p.warnings, p.issues[n])
	p.issues = p.issues[:n]
}

// refuse reports an AgentPool key that agentpool does not support.
func (p *parser) refuse(e entry, path string) {
	p.add(e.line(), join(path, e.key), "%s", unsupported[e.key])
}

// isExtension reports keys that hold YAML anchors or tool-specific data
// ("x-..."): ignored at every level, as in Compose files.
func isExtension(key string) bool { return strings.HasPrefix(key, "x-") }

// isAnchorHolder reports the top-level keys that WolfHarness's manifests
// keep for YAML anchors and metadata: ".name" and "_name"
// (".shared_model: &model ...", "_meta"), ignored as WolfHarness ignores
// them (with "x-" keys, which agentpool ignores at every level).
func isAnchorHolder(key string) bool {
	return strings.HasPrefix(key, ".") || strings.HasPrefix(key, "_")
}

// pythonRef reports whether s looks like a Python import path
// ("os.listdir", "webbrowser:open", "pkg/mod.fn") rather than a name.
func pythonRef(s string) bool { return strings.ContainsAny(s, ".:/") }
