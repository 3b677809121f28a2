package config

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/internal/bounded"
)

// AgentFiles are the bounds of the markdown agent files one load reads
// (.claude/agents/*.md, a plugin's agents, file_agents): collections such
// as wshobson/agents hold some 200 files of a few kilobytes each.
var AgentFiles = bounded.Limits{
	FileBytes:  256 << 10,
	TotalBytes: 16 << 20,
	Files:      MaxAgentFiles,
	Depth:      20,
	Nodes:      100_000,
	AliasNodes: 10_000,
}

// MaxAgentFiles bounds how many agent files one load reads.
const MaxAgentFiles = 512

// AgentFileOptions say how ParseAgentFile fills in what a file leaves to
// its surroundings.
type AgentFileOptions struct {
	// Name, when set, is the agent's name (file_agents' key); otherwise the
	// front matter's name is.
	Name string
	// DefaultModel is the model of an agent whose model is unset, inherit,
	// or an alias (sonnet, opus, haiku) that the environment does not map.
	DefaultModel ModelSpec
	// Options are the model types the program can build.
	Options Options
	// Getenv reads Claude Code's alias variables (ANTHROPIC_DEFAULT_*_MODEL);
	// os.Getenv when nil.
	Getenv func(string) string
}

// Claude Code's tools, by the toolset that has them in agentpool.
var claudeToolsets = []struct {
	toolset string
	tools   []string
}{
	{ToolsetFileAccess, []string{"Read", "Write", "Edit", "Glob", "Grep", "LS"}},
	{ToolsetExecution, []string{"Bash", "BashOutput", "KillShell"}},
	{ToolsetPlan, []string{"TodoWrite"}},
	{ToolsetFetch, []string{"WebFetch"}},
}

// claudeToolAliases are older or other names of the same tools.
var claudeToolAliases = map[string]string{"KillBash": "KillShell", "Agent": "Task"}

// agentFileKeys are the front matter keys ParseAgentFile applies;
// agentFileIgnored those it knows and does not apply, with why.
var (
	agentFileKeys = []string{"name", "description", "tools", "disallowedTools", "model"}
	// agentFileQuiet are keys for people and interfaces: no warning.
	agentFileQuiet   = []string{"color", "version", "author", "tags", "category", "displayName", "examples", "license"}
	agentFileIgnored = map[string]string{
		"permissionMode":           "approvals follow the agent's tool_approval and the settings' permissions",
		"skills":                   "give the agent the skills toolset in a manifest instead",
		"mcpServers":               "declare MCP servers in a manifest",
		"hooks":                    "agent-scoped hooks are not supported; put them in a settings file",
		"memory":                   "agent memory is not supported",
		"effort":                   "not supported",
		"maxTurns":                 "not supported",
		"background":               "not supported",
		"isolation":                "not supported",
		"initialPrompt":            "not supported",
		"allowed-tools":            "write tools instead",
		"disable-model-invocation": "agentpool lets the model delegate to every agent",
	}
)

// ParseAgentFile parses a Claude Code agent file: YAML front matter between
// "---" lines (name, description, tools, disallowedTools, model) and a
// markdown body, the agent's system prompt. tools is a comma-separated list
// (or a YAML list) of Claude Code tool names, each mapped to the agentpool
// toolset that has it (the toolset's other tools are disabled); without it
// the agent gets file_access, execution, plan and fetch, as a Claude Code
// subagent inherits every tool but Task. model "inherit", unset, or an
// alias (sonnet, opus, haiku) is opts.DefaultModel, unless Claude Code's
// ANTHROPIC_DEFAULT_<ALIAS>_MODEL names a model for the alias; other
// values are model ids as in a manifest. Errors are an *Error naming path
// and the line; warnings (tools agentpool does not have, keys it does not
// apply) are "path:line: key: why" lines.
func ParseAgentFile(path string, data []byte, opts AgentFileOptions) (*Agent, []string, error) {
	p := &parser{file: path, opts: opts.Options, budget: bounded.New(AgentFiles)}
	a, warns := p.agentFile(data, opts)
	if err := p.err(); err != nil {
		return nil, nil, err
	}
	return a, warns, nil
}

// ReadAgentFile reads and parses one agent file within budget (AgentFiles
// when nil).
func ReadAgentFile(budget *bounded.Budget, path string, opts AgentFileOptions) (*Agent, []string, error) {
	if budget == nil {
		budget = bounded.New(AgentFiles)
	}
	data, err := budget.ReadFile(path)
	if err != nil {
		if _, ok := err.(*bounded.Error); ok {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, nil, err
	}
	return ParseAgentFile(path, data, opts)
}

func (p *parser) agentFile(data []byte, opts AgentFileOptions) (*Agent, []string) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	front, body, ok := SplitFrontMatter(data)
	if !ok {
		p.add(1, "", "an agent file starts with YAML front matter between \"---\" lines (name, description, tools, model)")
		return nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		p.syntax(err, front)
		shiftIssues(p.issues, 1)
		return nil, nil
	}
	if err := p.budget.CheckYAML(&doc); err != nil {
		p.bound(err)
		return nil, nil
	}
	shiftLines(&doc, 1) // the front matter starts on line 2
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		p.add(1, "", "the front matter must be a mapping with name and description")
		return nil, nil
	}
	// Line (and the toolsets' lines) stay 0: they are lines of a
	// manifest, which the file_agents entry sets.
	a := &Agent{SystemPrompt: strings.TrimSpace(string(body))}
	var warns []string
	fields := map[string]entry{}
	for _, e := range p.entries(root, "") {
		switch {
		case slices.Contains(agentFileKeys, e.key):
			fields[e.key] = e
		case slices.Contains(agentFileQuiet, e.key):
		case agentFileIgnored[e.key] != "":
			warns = append(warns, fmt.Sprintf("%s:%d: %s: not applied: %s", p.file, e.line(), e.key, agentFileIgnored[e.key]))
		default:
			warns = append(warns, fmt.Sprintf("%s:%d: %s: unknown key, ignored", p.file, e.line(), e.key))
		}
	}
	a.Name = opts.Name
	if e, ok := fields["name"]; ok {
		n := p.str(e.val, "name")
		if a.Name == "" {
			a.Name = n
		}
	} else if a.Name == "" {
		p.add(root.Line, "name", "required: the name the agent is delegated to by")
	}
	if a.Name != "" && !nameRE().MatchString(a.Name) {
		line := root.Line
		if e, ok := fields["name"]; ok {
			line = e.val.Line
		}
		p.add(line, "name", "%q is not a valid agent name (a letter, then letters, digits, '_' or '-')", a.Name)
	}
	if e, ok := fields["description"]; ok {
		a.Description = strings.TrimSpace(p.str(e.val, "description"))
	}
	if a.Description == "" {
		p.add(root.Line, "description", "required: it says when to delegate to the agent")
	}
	a.Model = p.agentFileModel(fields, opts)
	var disallowed []string
	if e, ok := fields["disallowedTools"]; ok {
		disallowed = p.toolList(e.val, "disallowedTools")
	}
	var listed []string
	if e, ok := fields["tools"]; ok {
		listed = p.toolList(e.val, "tools")
		if len(listed) == 0 {
			p.add(e.val.Line, "tools", "lists no tool: leave it out for every tool")
		}
	}
	var line int
	if e, ok := fields["tools"]; ok {
		line = e.val.Line
	}
	a.Toolsets, warns = mapClaudeTools(p.file, line, listed, disallowed, warns)
	return a, warns
}

// agentFileModel maps the front matter's model.
func (p *parser) agentFileModel(fields map[string]entry, opts AgentFileOptions) ModelSpec {
	e, ok := fields["model"]
	if !ok {
		return opts.DefaultModel
	}
	s := strings.TrimSpace(p.str(e.val, "model"))
	switch s {
	case "", "inherit":
		return opts.DefaultModel
	case "sonnet", "opus", "haiku":
		getenv := opts.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		if id := strings.TrimSpace(getenv("ANTHROPIC_DEFAULT_" + strings.ToUpper(s) + "_MODEL")); id != "" {
			return ModelSpec{Type: ModelAnthropic, Model: id}
		}
		return opts.DefaultModel
	}
	var ms ModelSpec
	p.modelString(&ms, e.val, "model")
	return ms
}

// toolList reads a comma-separated string or a YAML list of tool names.
func (p *parser) toolList(n *yaml.Node, path string) []string {
	d := deref(n)
	var raw []string
	switch d.Kind {
	case yaml.ScalarNode:
		if isNull(d) {
			return nil
		}
		raw = strings.Split(d.Value, ",")
	case yaml.SequenceNode:
		for _, c := range d.Content {
			raw = append(raw, p.str(c, path))
		}
	default:
		p.add(n.Line, path, "expected a comma-separated list of tool names, got %s", describe(d))
	}
	var out []string
	for _, t := range raw {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// mapClaudeTools gives the toolsets of an agent that may use listed (all
// when empty) but not disallowed; a tool agentpool does not have is a
// warning naming it.
func mapClaudeTools(file string, line int, listed, disallowed, warns []string) ([]ToolsetSpec, []string) {
	canon := func(t string) string {
		if a, ok := claudeToolAliases[t]; ok {
			return a
		}
		return t
	}
	want := map[string]bool{}
	var missing []string
	subagent := false
	for _, t := range listed {
		t = canon(t)
		if t == "*" {
			listed = nil
			break
		}
		if t == "Task" {
			subagent = true
			continue
		}
		if toolsetOf(t) == "" {
			missing = append(missing, t)
			continue
		}
		want[t] = true
	}
	if len(listed) == 0 {
		for _, ts := range claudeToolsets {
			for _, t := range ts.tools {
				want[t] = true
			}
		}
	}
	for _, t := range disallowed {
		t = canon(t)
		if t == "Task" {
			subagent = false
		}
		delete(want, t)
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		warns = append(warns, fmt.Sprintf("%s:%d: tools: agentpool has no %s: the agent runs without %s", file, line, strings.Join(missing, ", "), plural(len(missing), "it", "them")))
	}
	var out []ToolsetSpec
	for _, ts := range claudeToolsets {
		spec := ToolsetSpec{Type: ts.toolset}
		used := false
		for _, t := range ts.tools {
			if want[t] {
				used = true
			} else {
				spec.Disabled = append(spec.Disabled, t)
			}
		}
		if used {
			out = append(out, spec)
		}
	}
	if subagent {
		out = append(out, ToolsetSpec{Type: ToolsetSubagent})
	}
	return out, warns
}

func toolsetOf(tool string) string {
	for _, ts := range claudeToolsets {
		if slices.Contains(ts.tools, tool) {
			return ts.toolset
		}
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// SplitFrontMatter splits a markdown file "---\nYAML\n---\nBODY" into
// its front matter and its body; ok is false without front matter.
func SplitFrontMatter(data []byte) (front, body []byte, ok bool) {
	first, rest, found := bytes.Cut(data, []byte("\n"))
	if !found || strings.TrimSpace(string(first)) != "---" {
		return nil, nil, false
	}
	off := 0
	for off <= len(rest) {
		line, _, _ := bytes.Cut(rest[off:], []byte("\n"))
		if strings.TrimSpace(string(line)) == "---" {
			end := off + len(line)
			if end < len(rest) {
				end++
			}
			return rest[:off], rest[end:], true
		}
		if off+len(line) >= len(rest) {
			break
		}
		off += len(line) + 1
	}
	return nil, nil, false
}

func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

func shiftIssues(is []Issue, by int) {
	for i := range is {
		if is[i].Line > 0 {
			is[i].Line += by
		}
	}
}
