package config

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

var (
	topKeys     = []string{"default_agent", "agents", "teams", "storage", "hooks", "limits", "workspace", "mcp_servers", "execution", "approvals"}
	agentKeys   = []string{"description", "model", "system_prompt", "tools", "toolsets", "workers", "max_turns", "max_tool_calls_per_turn", "tool_approval", "mcp_servers", "budget"}
	modelKeys   = []string{"type", "model", "base_url", "api_key", "api_key_env", "temperature", "max_tokens", "timeout", "input_price", "output_price", "custom_output_text", "call_tools", "tool_args", "turns", "delay", "max_response_bytes", "context_window", "compact_threshold", "prompt_template", "show_system", "input_prompt", "handler"}
	turnKeys    = []string{"text", "thinking", "tool_calls", "error", "delay", "finish_reason"}
	callKeys    = []string{"name", "args"}
	workerKeys  = []string{"name", "type", "pass_message_history", "reset_history_on_run"}
	teamKeys    = []string{"mode", "members", "shared_prompt", "description", "require_all"}
	storageKeys = []string{"path", "url"}
	hooksKeys   = []string{"settings"}
	limitsKeys  = []string{"max_depth", "max_children", "max_spawns", "spawn_timeout", "max_turns"}

	modelTypes     = []string{ModelTest, ModelScripted, ModelOpenAI, ModelAnthropic, ModelFallback, ModelInput}
	approvalValues = []string{ApprovalAllow, ApprovalAsk, ApprovalDeny}
	toolsetTypes   = []string{ToolsetSubagent, ToolsetFileAccess, ToolsetExecution, ToolsetPlan, ToolsetFetch, ToolsetSkills, ToolsetCode, ToolsetSearch, toolsetWorkers}
	teamModes      = []string{ModeParallel, ModeSequential}
	workerKinds    = []string{"agent", "team"}

	// modelKeyTypes lists the model types a key applies to; keys not listed
	// apply to every type.
	modelKeyTypes = map[string][]string{
		"model":              {ModelOpenAI, ModelAnthropic, ModelTest, ModelScripted},
		"base_url":           {ModelOpenAI, ModelAnthropic},
		"api_key":            {ModelOpenAI, ModelAnthropic},
		"api_key_env":        {ModelOpenAI, ModelAnthropic},
		"temperature":        {ModelOpenAI, ModelAnthropic},
		"timeout":            {ModelOpenAI, ModelAnthropic},
		"custom_output_text": {ModelTest},
		"call_tools":         {ModelTest},
		"tool_args":          {ModelTest},
		"turns":              {ModelScripted},
		"delay":              {ModelTest, ModelScripted},
		"prompt_template":    {ModelInput},
		"show_system":        {ModelInput},
		"input_prompt":       {ModelInput},
		"handler":            {ModelInput},
	}

	// Compiled on first use, not at package init, which every process
	// linking the package pays (agentpool version too).
	nameRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`) })
	yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })
)

func (p *parser) parse(data []byte) *Manifest {
	m := &Manifest{Agents: map[string]*Agent{}, Teams: map[string]*Team{}}
	p.memberLines = map[string][]int{}
	p.workerRefs = map[string][]workerRef{}
	root := p.decode(data)
	if root == nil {
		return m
	}
	self, err := filepath.Abs(p.file)
	if err != nil {
		self = p.file
	}
	root = p.inherit(root, filepath.Dir(p.file), []string{self})
	if p.refused {
		return m
	}
	p.manifest(m, root)
	p.validate(m)
	p.engineLimits(m)
	plainLines(m)
	m.Warnings = p.sortedWarnings()
	return m
}

// decode parses the YAML documents in data into one root node; it returns
// nil after reporting a syntax error or an empty file. A file of several
// documents ("---" between them, as AgentPool's examples write alternative
// manifests) is one manifest: see mergeDocuments.
func (p *parser) decode(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var roots []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p.syntax(err, data)
			return nil
		}
		if err := p.budget.CheckYAML(&doc); err != nil {
			p.bound(err)
			return nil
		}
		root := &doc
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if isNull(root) {
			continue // a document of comments only
		}
		roots = append(roots, root)
	}
	switch len(roots) {
	case 0:
		p.add(1, "", "manifest is empty: at least one agent is required")
		return nil
	case 1:
		return roots[0]
	}
	return p.mergeDocuments(roots)
}

// mergeDocuments reads the documents of one file as one manifest: their
// top-level mappings are joined in order, and a key that two documents
// both hold as a mapping (agents, teams, ...) holds the entries of both.
// A name given twice is the duplicate-key error at its line, as in one
// document; so is a top-level scalar or list given twice. A document that
// is not a mapping is an error.
func (p *parser) mergeDocuments(roots []*yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: roots[0].Line, Column: roots[0].Column}
	merged := map[string]*yaml.Node{} // top-level key -> the mapping that joins the documents'
	for _, r := range roots {
		d := deref(r)
		if d.Kind != yaml.MappingNode {
			p.add(r.Line, "", "a manifest must be a mapping with keys such as \"agents\" and \"teams\", got %s (a document of this file)", describe(d))
			continue
		}
		for i := 0; i+1 < len(d.Content); i += 2 {
			k, v := d.Content[i], d.Content[i+1]
			kd := deref(k)
			if kd.Kind != yaml.ScalarNode || kd.ShortTag() == "!!merge" {
				out.Content = append(out.Content, k, v) // reported, or resolved, by entries
				continue
			}
			key := kd.Value
			if m, ok := merged[key]; ok && deref(v).Kind == yaml.MappingNode {
				m.Content = append(m.Content, deref(v).Content...)
				continue
			}
			if dv := deref(v); dv.Kind == yaml.MappingNode {
				if _, seen := merged[key]; !seen {
					joined := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: dv.Line, Column: dv.Column,
						Content: append([]*yaml.Node(nil), dv.Content...)}
					merged[key] = joined
					out.Content = append(out.Content, k, joined)
					continue
				}
			}
			out.Content = append(out.Content, k, v) // a second one is reported as a duplicate key
		}
	}
	return out
}

// syntax reports a YAML syntax error at the line it is on (see
// problemLine).
func (p *parser) syntax(err error, data []byte) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	reported := 0
	if m := yamlLineRE().FindStringSubmatch(err.Error()); m != nil {
		reported, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	p.add(problemLine(err, data, reported), "", "invalid YAML: %s", msg)
}

func (p *parser) manifest(m *Manifest, root *yaml.Node) {
	if d := deref(root); d.Kind != yaml.MappingNode {
		p.add(root.Line, "", "a manifest must be a mapping with keys such as \"agents\" and \"teams\", got %s", describe(d))
		return
	}
	f, _ := p.object(root, "", append(slices.Clip(topKeys), agentPoolTopKeys...))

	if e, ok := f["default_agent"]; ok {
		m.DefaultAgent = p.str(e.val, "default_agent")
		p.defaultLine = e.val.Line
	}

	p.compatTop(m, f)
	fe, hasFileAgents := f["file_agents"]
	hasFileAgents = hasFileAgents && !empty(fe.val)
	if e, ok := f["agents"]; !ok || isNull(e.val) {
		if !hasFileAgents {
			p.add(root.Line, "agents", "at least one agent is required")
		}
	} else if d := deref(e.val); d.Kind != yaml.MappingNode {
		p.add(e.val.Line, "agents", "expected a mapping of agent names to agents, got %s", describe(d))
	} else {
		p.agents(m, e, d)
	}
	if hasFileAgents {
		p.fileAgents(m, fe)
	}

	if e, ok := f["teams"]; ok && !isNull(e.val) {
		if d := deref(e.val); d.Kind != yaml.MappingNode {
			p.add(e.val.Line, "teams", "expected a mapping of team names to teams, got %s", describe(d))
		} else {
			for _, te := range p.entries(d, "teams") {
				t := p.team(te)
				if a, clash := m.Agents[t.Name]; clash {
					p.add(te.line(), "teams."+t.Name, "name %q is already used by the agent at line %s (agents and teams share one namespace)", t.Name, p.lineRef(a.Line))
					continue
				}
				m.Teams[t.Name] = t
				m.TeamOrder = append(m.TeamOrder, t.Name)
			}
		}
	}
	p.applyTeamMode(m) // after teams: an eligible name may be a team's

	if e, ok := f["storage"]; ok {
		sf, _ := p.object(e.val, "storage", append(slices.Clip(storageKeys), agentPoolStorageKeys...))
		if se, ok := sf["path"]; ok {
			m.Storage.Path = p.str(se.val, "storage.path")
		}
		if ue, ok := sf["url"]; ok && !isNull(ue.val) {
			u := p.str(ue.val, "storage.url")
			switch {
			case u == "":
			case !isPostgresURL(u):
				p.add(ue.val.Line, "storage.url", "expected a postgres:// or postgresql:// URL, got %q (a SQLite database is storage.path)", redactURL(u))
			case m.Storage.Path != "":
				p.add(ue.val.Line, "storage.url", "storage.path is set too: use one of them")
			default:
				m.Storage.URL = u
			}
		}
		p.agentPoolStorage(&m.Storage, sf)
	}

	if e, ok := f["hooks"]; ok {
		hf, _ := p.object(e.val, "hooks", hooksKeys)
		if he, ok := hf["settings"]; ok {
			m.Hooks.Settings = p.settings(he.val, "hooks.settings")
		}
	}

	if e, ok := f["workspace"]; ok {
		m.Workspace = p.requiredStr(e.val, "workspace")
	}
	if e, ok := f["mcp_servers"]; ok {
		m.MCPServers = p.mcpServers(e.val, "mcp_servers")
	}

	if e, ok := f["execution"]; ok {
		m.Execution = p.execution(e)
	}
	if e, ok := f["approvals"]; ok {
		m.Approvals = p.approvals(e)
	}

	var lf map[string]entry
	if e, ok := f["limits"]; ok {
		lf, _ = p.object(e.val, "limits", limitsKeys)
	}
	m.Limits = p.limits(lf)
}

// checkName reports a name that does not match nameRE.
func (p *parser) checkName(line int, path, name string) {
	if !nameRE().MatchString(name) {
		p.add(line, path, "invalid name %q: names start with a letter and hold only letters, digits, \"_\" and \"-\"", name)
	}
}

// settings reads a string or a list of strings.
func (p *parser) settings(n *yaml.Node, path string) []string {
	d := deref(n)
	if isNull(d) {
		return nil
	}
	if d.Kind == yaml.ScalarNode {
		return []string{p.requiredStr(n, path)}
	}
	if d.Kind != yaml.SequenceNode {
		p.add(n.Line, path, "expected a path or a list of paths, got %s", describe(d))
		return nil
	}
	var out []string
	for i, c := range d.Content {
		if s := p.requiredStr(c, index(path, i)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) limits(f map[string]entry) Limits {
	l := Limits{}
	if e, ok := f["max_depth"]; ok {
		l.MaxDepth = p.count(e.val, "limits.max_depth")
	}
	if e, ok := f["max_children"]; ok {
		l.MaxChildren = p.count(e.val, "limits.max_children")
	}
	if e, ok := f["max_spawns"]; ok {
		l.MaxSpawns = p.count(e.val, "limits.max_spawns")
	}
	if e, ok := f["spawn_timeout"]; ok {
		l.SpawnTimeout = p.duration(e.val, "limits.spawn_timeout")
	}
	if e, ok := f["max_turns"]; ok {
		l.MaxTurns = p.count(e.val, "limits.max_turns")
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxChildren == 0 {
		l.MaxChildren = DefaultMaxChildren
	}
	if l.MaxSpawns == 0 {
		l.MaxSpawns = DefaultMaxSpawns
	}
	if l.MaxTurns == 0 {
		l.MaxTurns = DefaultMaxTurns
	}
	return l
}
