// Parsing of `tools:` and `toolsets:` entries: agentpool's toolset names
// and AgentPool's toolset and tool configurations.

package config

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/internal/hostallow"
)

// ToolsetSkills is AgentPool's skills toolset: load_skill and list_skills
// over the manifest's skill folders (see Skills).
const ToolsetSkills = "skills"

// ToolsetCode is AgentPool's code toolset: format_code and ast_grep
// (package tool/code).
const ToolsetCode = "code"

// toolsetWorkers is AgentPool's `{type: workers, workers: [...]}`: the
// workers join the agent's `workers:`.
const toolsetWorkers = "workers"

// toolsetOptions lists, per toolset type, the keys of its AgentPool
// configuration that agentpool accepts without using them (file system
// URLs, size limits, edit modes, ...): warned, since tools behave as
// agentpool's do whatever they say. "type", "namespace" and "tools"
// apply to every toolset.
var toolsetOptions = map[string][]string{
	ToolsetSubagent:   {"batch_stream_deltas"},
	ToolsetFileAccess: {"fs", "url", "root", "model", "storage_options", "conversion", "max_file_size_kb", "max_grep_output_kb", "use_subprocess_grep", "enable_diagnostics", "large_file_tokens", "map_max_tokens", "edit_tool", "max_image_size"},
	ToolsetExecution:  {"environment"},
	ToolsetPlan:       {"mode"},
	ToolsetFetch:      {},
	ToolsetSkills:     {},
	ToolsetCode:       {"environment"},
	ToolsetSearch:     {},
	toolsetWorkers:    {"workers"},
}

// toolsetKeys lists, per toolset type, the keys of its configuration that
// agentpool uses (besides "type" and "tools").
var toolsetKeys = map[string][]string{
	ToolsetFetch:  {"allowed_hosts"},
	ToolsetSearch: searchKeys,
}

// toolsetConfig is what a toolset entry configures besides its type.
type toolsetConfig struct {
	disabled     []string // tools turned off by its `tools:` map
	allowedHosts []string // the fetch toolset's allowed_hosts
	search       *SearchSpec
}

// unsupportedToolsets are AgentPool toolset types with no agentpool
// equivalent, and why.
var unsupportedToolsets = map[string]string{
	"user_interaction": "ask_user has no agentpool equivalent; the user is asked through tool_approval",
	"openapi":          "OpenAPI tools are not built in; expose the API through an MCP server",
	"composio":         "Composio tools are not built in; use Composio's MCP server",
	"config_creation":  "agentpool does not let a model write manifests",
	"mcp_discovery":    "list MCP servers under mcp_servers instead",
	"notifications":    "notifications have no agentpool equivalent",
	"semantic_memory":  "semantic memory has no agentpool equivalent",
	"vfs":              "resource filesystems are not used by agentpool; use file_access",
	"debug":            "the debug tools inspect AgentPool's Python runtime",
	"resource_access":  "resource filesystems are not used by agentpool; use file_access",
	"tool_management":  "tools are fixed when the pool is built",
	"history":          "history search has no agentpool equivalent; see agentpool sessions",
	"integrations":     "adding MCP servers at run time is not supported; list them under mcp_servers",
	// AgentPool's single tools (its tools: entries of one tool each).
	"read":           singleFileTool,
	"write":          singleFileTool,
	"edit":           singleFileTool,
	"grep":           singleFileTool,
	"list_directory": singleFileTool,
	"delete_path":    singleFileTool,
	"download_file":  "AgentPool's download_file tool has no agentpool equivalent; the fetch toolset (WebFetch) reads a URL",
	"question":       "AgentPool's question tool (ask the user) has no agentpool equivalent; the user is asked through tool_approval",
	"web_search":     "AgentPool's single web_search tool is not supported; use the search toolset ({type: search, provider: tavily})",
	// WolfHarness's simulation toolsets: a simulated user that drives a
	// target agent.
	"simulation":              simulationTool,
	"simulation_async":        simulationTool,
	"async_simulation":        simulationTool,
	"cooperative_simulation":  simulationTool,
	"native_async_simulation": simulationTool,
}

const (
	singleFileTool = "it is one of AgentPool's single file tools; agentpool's file_access toolset has Read, Write, Edit, Glob, Grep and LS (turn off the others with tools: {Write: false, Edit: false})"
	simulationTool = "WolfHarness's simulation toolsets (a simulated user driving a target agent) have no agentpool equivalent; script the user with a scripted model instead"
)

// pythonToolsets are AgentPool toolset types that load or run Python.
var pythonToolsets = map[string]string{
	"import_tools":     "toolset \"import_tools\" imports Python functions",
	"custom":           "toolset \"custom\" is a Python class",
	"entry_points":     "toolset \"entry_points\" loads Python entry points",
	"code_mode":        "toolset \"code_mode\" runs tools from generated Python code",
	"remote_code_mode": "toolset \"remote_code_mode\" runs tools from generated Python code",
	"code_execution":   "toolset \"code_execution\" runs Python code",
	"execute_code":     "tool \"execute_code\" runs Python code",
	"langchain":        "toolset \"langchain\" loads LangChain's Python tools",
	"crewai":           "toolset \"crewai\" loads CrewAI's Python tools",
	"upsonic":          "toolset \"upsonic\" loads Upsonic's Python tools",
}

// toolsetList collects the toolsets of one agent across `tools:` and
// `toolsets:` (AgentPool keeps them apart; agentpool merges them).
type toolsetList struct {
	out     []ToolsetSpec
	first   map[string]int // written name -> line first listed
	workers []*yaml.Node   // `workers:` lists of workers toolsets
	python  []pythonTool   // tools of Python code: skipped, warned
}

// toolsets reads toolset entries into l.
func (p *parser) toolsets(n *yaml.Node, path string, l *toolsetList) {
	if l.first == nil {
		l.first = map[string]int{}
	}
	for i, c := range p.list(n, path) {
		ip := index(path, i)
		typ, tn, tc, ok := p.toolsetEntry(c, ip, l)
		if !ok {
			continue
		}
		written := typ
		typ = canonicalToolset(typ)
		if written == "agent_cli" {
			p.warn(tn.Line, ip, "agent_cli is mapped onto the subagent toolset (list_available_nodes, task, delegate_to, ask_agent, ...): its pool-editing commands (create-agent, register-tool, connect, ...) are not offered, as agentpool's pool is fixed when built")
		}
		if w, dup := l.first[written]; dup {
			at := ip
			if tn != c {
				at += ".type"
			}
			p.add(tn.Line, at, "duplicate toolset %q (first listed at line %s)", written, p.lineRef(w))
			continue
		}
		l.first[written] = c.Line
		if typ == toolsetWorkers {
			continue // its workers join the agent's
		}
		if j := slices.IndexFunc(l.out, func(t ToolsetSpec) bool { return t.Type == typ }); j >= 0 {
			l.out[j].Disabled = append(l.out[j].Disabled, tc.disabled...)
			l.out[j].AllowedHosts = append(l.out[j].AllowedHosts, tc.allowedHosts...)
			continue // another name of a toolset already listed
		}
		l.out = append(l.out, ToolsetSpec{Type: typ, Disabled: tc.disabled, AllowedHosts: tc.allowedHosts, Search: tc.search, Line: c.Line})
	}
}

// toolsetEntry reads one entry: a name, or a mapping with "type". It
// returns the type as written, the node to report it at and what the
// entry configures.
func (p *parser) toolsetEntry(c *yaml.Node, ip string, l *toolsetList) (typ string, tn *yaml.Node, tc toolsetConfig, ok bool) {
	if (compatKeys{p}).pythonToolEntry(c, ip, l) {
		return "", nil, tc, false
	}
	if d := deref(c); d.Kind == yaml.ScalarNode && !isNull(d) {
		if typ, ok = p.word(c, ip); !ok {
			return "", nil, tc, false
		}
		ok = p.knownToolset(typ, c, ip, true)
		if ok && typ == ToolsetSearch {
			tc.search = p.searchSpec(nil, ip, c.Line) // warns: no provider
		}
		return typ, c, tc, ok
	}
	d := deref(c)
	if d.Kind != yaml.MappingNode && !isNull(d) {
		p.object(c, ip, nil) // reports the shape
		return "", nil, tc, false
	}
	te := findKey(d, "type")
	if te == nil {
		if findKey(d, "name") != nil {
			return p.namedTool(c, ip)
		}
		p.add(c.Line, ip, "missing required field \"type\" (known: %s)", strings.Join(toolsetTypes, ", "))
		return "", nil, tc, false
	}
	if typ, ok = p.word(te, ip+".type"); !ok {
		return "", nil, tc, false
	}
	if typ == "builtin" {
		return p.builtinTool(c, ip)
	}
	if !p.knownToolset(typ, te, ip+".type", false) {
		return "", nil, tc, false
	}
	canon := canonicalToolset(typ)
	known := slices.Concat([]string{"type", "namespace", "tools", "enabled"}, toolsetKeys[canon], toolsetOptions[canon])
	f, _ := p.object(c, ip, known)
	if e, ok := f["enabled"]; ok && !p.boolean(e.val, ip+".enabled", true) {
		return "", nil, tc, false // AgentPool's enabled: false leaves the entry out
	}
	var ignored []string
	for _, k := range toolsetOptions[canon] {
		if e, ok := f[k]; ok && !isNull(e.val) && k != "workers" {
			ignored = append(ignored, k)
		}
	}
	if e, ok := f["namespace"]; ok && !isNull(e.val) {
		ignored = append(ignored, "namespace")
	}
	if len(ignored) > 0 {
		p.warn(c.Line, ip, "ignored: %s (agentpool's %s tools keep their names and limits)", strings.Join(ignored, ", "), canon)
	}
	if e, ok := f["tools"]; ok {
		tc.disabled = p.toolSwitches(e.val, ip+".tools")
	}
	if e, ok := f["allowed_hosts"]; ok {
		tc.allowedHosts = p.allowedHosts(e.val, ip+".allowed_hosts")
	}
	if e, ok := f["workers"]; ok {
		l.workers = append(l.workers, e.val)
	}
	if canon == ToolsetSearch {
		tc.search = p.searchSpec(f, ip, c.Line)
	}
	return typ, te, tc, true
}

// namedTool reads AgentPool's entry without a type, {name: NAME,
// enabled: BOOL}: the tool or toolset NAME, as if written as a plain
// string, unless enabled is false.
func (p *parser) namedTool(c *yaml.Node, ip string) (string, *yaml.Node, toolsetConfig, bool) {
	f, _ := p.object(c, ip, []string{"name", "enabled", "provider", "description"})
	ne := f["name"]
	if e, ok := f["provider"]; ok && !isNull(e.val) {
		p.python(e.val.Line, ip+".provider", "tool provider %s is a Python resource provider", describe(e.val))
		return "", nil, toolsetConfig{}, false
	}
	typ, ok := p.word(ne.val, ip+".name")
	if !ok {
		return "", nil, toolsetConfig{}, false
	}
	if e, ok := f["enabled"]; ok && !p.boolean(e.val, ip+".enabled", true) {
		return "", nil, toolsetConfig{}, false
	}
	if e, ok := f["description"]; ok && !isNull(e.val) {
		p.warn(e.line(), ip+".description", "ignored: agentpool's tools keep their own descriptions")
	}
	return typ, ne.val, toolsetConfig{}, p.knownToolset(typ, ne.val, ip+".name", true)
}

// knownToolset reports, for a toolset type that is not agentpool's, why it
// cannot be used. scalar: the type was written as a plain string, which
// AgentPool reads as a Python import path.
func (p *parser) knownToolset(typ string, n *yaml.Node, path string, scalar bool) bool {
	canon := canonicalToolset(typ)
	if _, ok := toolsetOptions[canon]; ok {
		return true
	}
	if why, ok := pythonToolsets[typ]; ok {
		p.python(n.Line, path, "%s", why)
		return false
	}
	if why, ok := unsupportedToolsets[typ]; ok {
		p.add(n.Line, path, "toolset %q is not supported: %s", typ, why)
		return false
	}
	if scalar && pythonRef(typ) {
		p.python(n.Line, path, "tool %q is a Python import path", typ)
		return false
	}
	if scalar && suggest(typ, toolsetTypes) == "" {
		// AgentPool looks a bare name up among the tools its Python
		// program registered.
		p.add(n.Line, path, "no toolset is named %q: AgentPool finds a tool of that name among those its Python program registered, which agentpool cannot load; agentpool's toolsets are %s, and MCP servers (mcp_servers) add tools", typ, strings.Join(toolsetTypes, ", "))
		return false
	}
	p.add(n.Line, path, "unknown toolset type %q%s", typ, orKnown(typ, toolsetTypes))
	return false
}

// allowedHosts reads the fetch toolset's `allowed_hosts:`, a list of host
// names, IP addresses and CIDR networks; each bad entry is reported at its
// line.
func (p *parser) allowedHosts(n *yaml.Node, path string) []string {
	var out []string
	for i, c := range p.list(n, path) {
		h, ok := p.word(c, index(path, i))
		if !ok {
			continue
		}
		if err := hostallow.Check(h); err != nil {
			p.add(c.Line, index(path, i), "%v", err)
			continue
		}
		out = append(out, h)
	}
	return out
}

// builtinTool reads AgentPool's `{type: builtin, builtin_type: ...}`:
// web_fetch is the fetch toolset; the others are provider-side tools that
// agentpool does not offer.
func (p *parser) builtinTool(c *yaml.Node, ip string) (string, *yaml.Node, toolsetConfig, bool) {
	f, _ := p.object(c, ip, []string{"type", "builtin_type", "name", "description", "enabled", "requires_confirmation", "metadata", "hints"})
	be, ok := f["builtin_type"]
	if !ok {
		p.add(c.Line, ip, "missing required field \"builtin_type\" (agentpool has web_fetch)")
		return "", nil, toolsetConfig{}, false
	}
	bt, ok := p.word(be.val, ip+".builtin_type")
	if !ok {
		return "", nil, toolsetConfig{}, false
	}
	if bt != "web_fetch" {
		p.add(be.val.Line, ip+".builtin_type", "builtin tool %q is not supported: agentpool offers web_fetch (the fetch toolset); provider-side tools such as web_search and code_execution are not", bt)
		return "", nil, toolsetConfig{}, false
	}
	if e, ok := f["enabled"]; ok && !p.boolean(e.val, ip+".enabled", true) {
		return "", nil, toolsetConfig{}, false
	}
	return ToolsetFetch, be.val, toolsetConfig{}, true
}

// toolSwitches reads a toolset's `tools:` map of tool names to true/false
// and returns the names turned off.
func (p *parser) toolSwitches(n *yaml.Node, path string) []string {
	d := deref(n)
	if isNull(d) {
		return nil
	}
	if d.Kind != yaml.MappingNode {
		p.add(n.Line, path, "expected a mapping of tool names to true or false, got %s", describe(d))
		return nil
	}
	var off []string
	for _, e := range p.entries(d, path) {
		if !p.boolean(e.val, join(path, e.key), true) {
			off = append(off, e.key)
		}
	}
	return off
}

// findKey returns the value of key in mapping d, or nil.
func findKey(d *yaml.Node, key string) *yaml.Node {
	d = deref(d)
	if d == nil || d.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(d.Content); i += 2 {
		if k := deref(d.Content[i]); k != nil && k.Value == key {
			return d.Content[i+1]
		}
	}
	return nil
}
