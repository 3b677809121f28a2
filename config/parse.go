package config

import (
	"bytes"
	"errors"
	"io"
	pathpkg "path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	topKeys     = []string{"default_agent", "agents", "teams", "storage", "hooks", "limits", "workspace", "mcp_servers"}
	agentKeys   = []string{"description", "model", "system_prompt", "tools", "toolsets", "workers", "max_turns", "tool_approval", "mcp_servers"}
	modelKeys   = []string{"type", "model", "base_url", "api_key", "api_key_env", "temperature", "max_tokens", "timeout", "input_price", "output_price", "custom_output_text", "call_tools", "tool_args", "turns", "delay"}
	turnKeys    = []string{"text", "thinking", "tool_calls", "error", "delay", "finish_reason"}
	callKeys    = []string{"name", "args"}
	toolsetKeys = []string{"type"}
	workerKeys  = []string{"name", "type", "pass_message_history", "reset_history_on_run"}
	teamKeys    = []string{"mode", "members", "shared_prompt", "description", "require_all"}
	storageKeys = []string{"path"}
	hooksKeys   = []string{"settings"}
	limitsKeys  = []string{"max_depth", "max_children", "max_spawns", "spawn_timeout", "max_turns"}

	modelTypes     = []string{ModelTest, ModelScripted, ModelOpenAI, ModelAnthropic}
	approvalValues = []string{ApprovalAllow, ApprovalAsk, ApprovalDeny}
	toolsetTypes   = []string{ToolsetSubagent, ToolsetFileAccess, ToolsetExecution, ToolsetPlan, ToolsetFetch}
	teamModes      = []string{ModeParallel, ModeSequential}
	workerKinds    = []string{"agent", "team"}

	// modelKeyTypes lists the model types a key applies to; keys not listed
	// apply to every type.
	modelKeyTypes = map[string][]string{
		"model":              {ModelOpenAI, ModelAnthropic},
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
	}

	nameRE     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

func (p *parser) parse(data []byte) *Manifest {
	m := &Manifest{Agents: map[string]*Agent{}, Teams: map[string]*Team{}}
	p.memberLines = map[string][]int{}
	p.workerRefs = map[string][]workerRef{}
	root := p.decode(data)
	if root == nil {
		return m
	}
	p.manifest(m, root)
	p.validate(m)
	return m
}

// decode parses the single YAML document in data; it returns nil after
// reporting a syntax error or an empty file.
func (p *parser) decode(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.add(1, "", "manifest is empty: at least one agent is required")
		} else {
			p.syntax(err, data)
		}
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			p.add(1, "", "manifest is empty: at least one agent is required")
			return nil
		}
		root = root.Content[0]
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		p.add(extra.Line, "", "a manifest must hold exactly one YAML document")
	} else if !errors.Is(err, io.EOF) {
		p.syntax(err, data)
	}
	return root
}

// syntax reports a YAML syntax error with its line.
func (p *parser) syntax(err error, data []byte) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		p.add(line, "", "invalid YAML: %s", m[2])
		return
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 1 // the parser leaves out the line number for line 1
	for _, pre := range []string{"unknown anchor '", "anchor '"} {
		if strings.HasPrefix(msg, pre) {
			name, _, _ := strings.Cut(msg[len(pre):], "'")
			mark := "*" + name
			if pre == "anchor '" {
				mark = "&" + name
			}
			line = 0
			for i, l := range strings.Split(string(data), "\n") {
				if strings.Contains(l, mark) {
					line = i + 1
					break
				}
			}
		}
	}
	p.add(line, "", "invalid YAML: %s", msg)
}

func (p *parser) manifest(m *Manifest, root *yaml.Node) {
	if d := deref(root); d.Kind != yaml.MappingNode {
		p.add(root.Line, "", "a manifest must be a mapping with keys such as \"agents\" and \"teams\", got %s", describe(d))
		return
	}
	f, _ := p.object(root, "", topKeys)

	if e, ok := f["default_agent"]; ok {
		m.DefaultAgent = p.str(e.val, "default_agent")
		p.defaultLine = e.val.Line
	}

	if e, ok := f["agents"]; !ok || isNull(e.val) {
		p.add(root.Line, "agents", "at least one agent is required")
	} else if d := deref(e.val); d.Kind != yaml.MappingNode {
		p.add(e.val.Line, "agents", "expected a mapping of agent names to agents, got %s", describe(d))
	} else {
		es := p.entries(d, "agents")
		if len(es) == 0 {
			p.add(e.val.Line, "agents", "at least one agent is required")
		}
		for _, ae := range es {
			a := p.agent(ae)
			m.Agents[a.Name] = a
			m.AgentOrder = append(m.AgentOrder, a.Name)
		}
	}

	if e, ok := f["teams"]; ok && !isNull(e.val) {
		if d := deref(e.val); d.Kind != yaml.MappingNode {
			p.add(e.val.Line, "teams", "expected a mapping of team names to teams, got %s", describe(d))
		} else {
			for _, te := range p.entries(d, "teams") {
				t := p.team(te)
				if a, clash := m.Agents[t.Name]; clash {
					p.add(te.line(), "teams."+t.Name, "name %q is already used by the agent at line %d (agents and teams share one namespace)", t.Name, a.Line)
					continue
				}
				m.Teams[t.Name] = t
				m.TeamOrder = append(m.TeamOrder, t.Name)
			}
		}
	}

	if e, ok := f["storage"]; ok {
		sf, _ := p.object(e.val, "storage", storageKeys)
		if se, ok := sf["path"]; ok {
			m.Storage.Path = p.str(se.val, "storage.path")
		}
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

	var lf map[string]entry
	if e, ok := f["limits"]; ok {
		lf, _ = p.object(e.val, "limits", limitsKeys)
	}
	m.Limits = p.limits(lf)
}

// checkName reports a name that does not match nameRE.
func (p *parser) checkName(line int, path, name string) {
	if !nameRE.MatchString(name) {
		p.add(line, path, "invalid name %q: names start with a letter and hold only letters, digits, \"_\" and \"-\"", name)
	}
}

func (p *parser) agent(e entry) *Agent {
	path := "agents." + e.key
	a := &Agent{Name: e.key, Line: e.line()}
	p.checkName(e.line(), path, e.key)
	f, ok := p.object(e.val, path, agentKeys)
	if !ok {
		return a
	}
	if fe, ok := f["description"]; ok {
		a.Description = p.str(fe.val, path+".description")
	}
	if fe, ok := f["model"]; ok {
		a.Model = p.model(fe, path+".model")
	} else {
		p.add(e.line(), path, "missing required field \"model\" (for example \"model: test\" or \"model: openai:gpt-4o-mini\")")
	}
	if fe, ok := f["system_prompt"]; ok {
		a.SystemPrompt = p.prompt(fe.val, path+".system_prompt")
	}
	tools, hasTools := f["tools"]
	toolsets, hasToolsets := f["toolsets"]
	switch {
	case hasTools && hasToolsets:
		later := toolsets
		if tools.line() > toolsets.line() {
			later = tools
		}
		p.add(later.line(), join(path, later.key), "use either \"tools\" or \"toolsets\", not both")
	case hasTools:
		a.Toolsets = p.toolsets(tools.val, path+".tools")
	case hasToolsets:
		a.Toolsets = p.toolsets(toolsets.val, path+".toolsets")
	}
	if fe, ok := f["workers"]; ok {
		a.Workers, p.workerRefs[a.Name] = p.workers(fe.val, path+".workers")
	}
	if fe, ok := f["max_turns"]; ok {
		a.MaxTurns = p.count(fe.val, path+".max_turns")
	}
	if fe, ok := f["tool_approval"]; ok {
		a.ToolApproval = p.toolApproval(fe.val, path+".tool_approval")
	}
	if fe, ok := f["mcp_servers"]; ok {
		a.MCPServers = p.mcpServers(fe.val, path+".mcp_servers")
	}
	return a
}

// toolApproval reads `tool_approval`: a mapping of tool names or patterns
// (path.Match syntax, "*" for every tool) to allow, ask or deny.
func (p *parser) toolApproval(n *yaml.Node, path string) map[string]string {
	d := deref(n)
	if isNull(d) {
		return nil
	}
	if d.Kind != yaml.MappingNode {
		p.add(n.Line, path, "expected a mapping of tool names (or patterns such as \"*\") to allow, ask or deny, got %s", describe(d))
		return nil
	}
	out := map[string]string{}
	for _, e := range p.entries(d, path) {
		ep := join(path, e.key)
		if strings.TrimSpace(e.key) == "" {
			p.add(e.line(), path, "tool name must not be empty")
			continue
		}
		if _, err := pathpkg.Match(e.key, ""); err != nil {
			p.add(e.line(), ep, "invalid tool pattern %q: %v", e.key, err)
			continue
		}
		v, ok := p.word(e.val, ep)
		if !ok {
			continue
		}
		if !contains(approvalValues, v) {
			p.add(e.val.Line, ep, "unknown approval %q%s", v, orKnown(v, approvalValues))
			continue
		}
		out[e.key] = v
	}
	return out
}

// prompt reads a string or a list of strings joined with "\n\n".
func (p *parser) prompt(n *yaml.Node, path string) string {
	d := deref(n)
	if d == nil || d.Kind != yaml.SequenceNode {
		return p.str(n, path)
	}
	parts := make([]string, 0, len(d.Content))
	for i, c := range d.Content {
		if dc := deref(c); dc.Kind != yaml.ScalarNode || isNull(dc) {
			p.add(c.Line, index(path, i), "expected a string, got %s", describe(dc))
			continue
		}
		parts = append(parts, p.str(c, index(path, i)))
	}
	return strings.Join(parts, "\n\n")
}

func (p *parser) model(e entry, path string) ModelSpec {
	ms := ModelSpec{Line: e.line()}
	d := deref(e.val)
	switch {
	case isNull(d):
		p.add(e.line(), path, "must not be empty (for example \"test\" or \"openai:gpt-4o-mini\")")
	case d.Kind == yaml.ScalarNode:
		p.modelString(&ms, e.val, path)
	case d.Kind == yaml.MappingNode:
		p.modelMap(&ms, e, path)
	default:
		p.add(e.val.Line, path, "expected a model name or a mapping, got %s", describe(d))
	}
	return ms
}

func unknownModelType(t string) string {
	known := ModelTypes()
	if s := suggest(t, known); s != "" {
		return "unknown model type " + strconv.Quote(t) + s
	}
	return "unknown model type " + strconv.Quote(t) + " (known: " + strings.Join(known, ", ") + ")"
}

// modelString parses "test", "openai:MODEL", "anthropic:MODEL" and, for a
// registered type, "TYPE" or "TYPE:MODEL".
func (p *parser) modelString(ms *ModelSpec, n *yaml.Node, path string) {
	s := strings.TrimSpace(deref(n).Value)
	typ, id, hasID := strings.Cut(s, ":")
	switch typ {
	case ModelTest:
		if hasID {
			p.add(n.Line, path, "the test model takes no model id, got %q", s)
			return
		}
		ms.Type = typ
	case ModelScripted:
		p.add(n.Line, path, "a scripted model needs turns: use the mapping form {type: scripted, turns: [...]}")
	case ModelOpenAI, ModelAnthropic:
		if strings.TrimSpace(id) == "" {
			p.add(n.Line, path, "missing model id: write \"%s:MODEL\", e.g. %q", typ, typ+":"+exampleModel(typ))
			return
		}
		ms.Type, ms.Model = typ, strings.TrimSpace(id)
	default:
		if isRegisteredModelType(typ) {
			ms.Type, ms.Model = typ, strings.TrimSpace(id)
			return
		}
		p.add(n.Line, path, "%s", unknownModelType(typ))
	}
}

func exampleModel(typ string) string {
	if typ == ModelAnthropic {
		return "claude-3-5-haiku-latest"
	}
	return "gpt-4o-mini"
}

func (p *parser) modelMap(ms *ModelSpec, e entry, path string) {
	f, _ := p.object(e.val, path, modelKeys)
	te, ok := f["type"]
	if !ok {
		p.add(e.line(), path, "missing required field \"type\" (one of %s)", strings.Join(ModelTypes(), ", "))
	} else if typ, ok := p.word(te.val, path+".type"); ok {
		if contains(ModelTypes(), typ) {
			ms.Type = typ
		} else {
			p.add(te.val.Line, path+".type", "%s", unknownModelType(typ))
		}
	}
	// keys that do not apply to the type
	if ms.Type != "" {
		for _, k := range modelKeys {
			fe, ok := f[k]
			if types := modelKeyTypesFor(k); ok && types != nil && !contains(types, ms.Type) {
				p.add(fe.line(), join(path, k), "field %q does not apply to %s models (only to %s)", k, ms.Type, andList(types))
			}
		}
	}
	get := func(k string) (*yaml.Node, string, bool) {
		fe, ok := f[k]
		return fe.val, join(path, k), ok
	}
	if n, fp, ok := get("model"); ok {
		ms.Model = p.requiredStr(n, fp)
	} else if ms.Type == ModelOpenAI || ms.Type == ModelAnthropic {
		p.add(e.line(), path, "missing required field \"model\" (the %s model id, e.g. %q)", ms.Type, exampleModel(ms.Type))
	}
	if n, fp, ok := get("base_url"); ok {
		ms.BaseURL = p.str(n, fp)
	}
	if n, fp, ok := get("api_key"); ok {
		ms.APIKey = p.str(n, fp)
	}
	if n, fp, ok := get("api_key_env"); ok {
		ms.APIKeyEnv = p.str(n, fp)
		if ms.APIKey != "" && ms.APIKeyEnv != "" {
			p.add(n.Line, fp, "set either api_key or api_key_env, not both")
		}
	}
	if n, fp, ok := get("temperature"); ok {
		if v, ok := p.number(n, fp); ok {
			if v < 0 || v > 2 {
				p.add(n.Line, fp, "must be between 0 and 2, got %v", v)
			} else {
				ms.Temperature = &v
			}
		}
	}
	if n, fp, ok := get("max_tokens"); ok {
		ms.MaxTokens = p.count(n, fp)
	}
	if n, fp, ok := get("timeout"); ok {
		ms.Timeout = p.duration(n, fp)
	}
	if n, fp, ok := get("input_price"); ok {
		ms.InputPrice = p.price(n, fp)
	}
	if n, fp, ok := get("output_price"); ok {
		ms.OutputPrice = p.price(n, fp)
	}
	if n, fp, ok := get("custom_output_text"); ok {
		ms.CustomOutputText = p.str(n, fp)
	}
	if n, fp, ok := get("call_tools"); ok {
		for i, c := range p.list(n, fp) {
			ms.CallTools = append(ms.CallTools, p.toolName(c, index(fp, i)))
		}
	}
	if n, fp, ok := get("tool_args"); ok {
		if d := deref(n); !isNull(d) && d.Kind != yaml.MappingNode {
			p.add(n.Line, fp, "expected a mapping of tool names to arguments, got %s", describe(d))
		} else {
			ms.ToolArgs = map[string]map[string]any{}
			for _, ae := range p.entries(n, fp) {
				ap := join(fp, ae.key)
				if !contains(ms.CallTools, ae.key) {
					p.add(ae.line(), ap, "tool %q is not listed in call_tools%s", ae.key, suggest(ae.key, ms.CallTools))
				}
				ms.ToolArgs[ae.key] = p.args(ae.val, ap)
			}
		}
	}
	if n, fp, ok := get("turns"); ok {
		items := p.list(n, fp)
		for i, c := range items {
			ms.Turns = append(ms.Turns, p.turn(c, index(fp, i)))
		}
		if len(items) == 0 && ms.Type == ModelScripted && (isNull(n) || deref(n).Kind == yaml.SequenceNode) {
			p.add(n.Line, fp, "at least one turn is required")
		}
	} else if ms.Type == ModelScripted {
		p.add(e.line(), path, "missing required field \"turns\" (the responses of the scripted model, in order)")
	}
	if n, fp, ok := get("delay"); ok {
		ms.Delay = p.duration(n, fp)
	}
}

// toolName reads a non-empty tool name.
func (p *parser) toolName(n *yaml.Node, path string) string {
	d := deref(n)
	if d.Kind != yaml.ScalarNode || isNull(d) || strings.TrimSpace(d.Value) == "" {
		p.add(n.Line, path, "expected a non-empty tool name, got %s", describe(d))
		return ""
	}
	return d.Value
}

// turn reads a scripted turn: a mapping, or a string (shorthand for text).
func (p *parser) turn(n *yaml.Node, path string) ScriptTurn {
	var t ScriptTurn
	if d := deref(n); d.Kind == yaml.ScalarNode && !isNull(d) {
		t.Text = d.Value
		return t
	}
	f, ok := p.object(n, path, turnKeys)
	if !ok {
		return t
	}
	if isNull(n) {
		p.add(n.Line, path, "empty turn: set text, thinking, tool_calls or error")
		return t
	}
	if fe, ok := f["text"]; ok {
		t.Text = p.str(fe.val, path+".text")
	}
	if fe, ok := f["thinking"]; ok {
		t.Thinking = p.str(fe.val, path+".thinking")
	}
	if fe, ok := f["tool_calls"]; ok {
		fp := path + ".tool_calls"
		for i, c := range p.list(fe.val, fp) {
			cp := index(fp, i)
			cf, ok := p.object(c, cp, callKeys)
			if !ok {
				continue
			}
			var call ScriptToolCall
			if ne, ok := cf["name"]; ok {
				call.Name = p.toolName(ne.val, cp+".name")
			} else {
				p.add(c.Line, cp, "missing required field \"name\"")
			}
			if ae, ok := cf["args"]; ok {
				call.Args = p.args(ae.val, cp+".args")
			} else {
				call.Args = map[string]any{}
			}
			t.ToolCalls = append(t.ToolCalls, call)
		}
	}
	if fe, ok := f["error"]; ok {
		t.Error = p.requiredStr(fe.val, path+".error")
	}
	if fe, ok := f["delay"]; ok {
		t.Delay = p.duration(fe.val, path+".delay")
	}
	if fe, ok := f["finish_reason"]; ok {
		t.FinishReason = p.requiredStr(fe.val, path+".finish_reason")
	}
	return t
}

// toolsets reads toolset entries: {type: subagent} or "subagent".
func (p *parser) toolsets(n *yaml.Node, path string) []ToolsetSpec {
	var out []ToolsetSpec
	first := map[string]int{}
	for i, c := range p.list(n, path) {
		ip := index(path, i)
		var (
			typ string
			tn  *yaml.Node
			ok  bool
		)
		if d := deref(c); d.Kind == yaml.ScalarNode && !isNull(d) {
			tn = c
			if typ, ok = p.word(c, ip); !ok {
				continue
			}
		} else {
			var f map[string]entry
			if f, ok = p.object(c, ip, toolsetKeys); !ok {
				continue
			}
			te, found := f["type"]
			if !found {
				p.add(c.Line, ip, "missing required field \"type\" (known: %s)", strings.Join(toolsetTypes, ", "))
				continue
			}
			tn, ip = te.val, ip+".type"
			if typ, ok = p.word(tn, ip); !ok {
				continue
			}
		}
		written := typ
		typ = canonicalToolset(typ)
		if !contains(toolsetTypes, typ) {
			p.add(tn.Line, ip, "unknown toolset type %q%s", typ, orKnown(typ, toolsetTypes))
			continue
		}
		if w, dup := first[written]; dup {
			p.add(tn.Line, ip, "duplicate toolset %q (first listed at line %d)", written, w)
			continue
		}
		first[written] = c.Line
		if slices.ContainsFunc(out, func(t ToolsetSpec) bool { return t.Type == typ }) {
			continue // another name of a toolset already listed
		}
		out = append(out, ToolsetSpec{Type: typ, Line: c.Line})
	}
	return out
}

// orKnown returns a suggestion, or the list of known values.
func orKnown(s string, known []string) string {
	if sg := suggest(s, known); sg != "" {
		return sg
	}
	return " (known: " + strings.Join(known, ", ") + ")"
}

// workers reads worker entries: "name" or {name, type, pass_message_history,
// reset_history_on_run}. refs holds, for each worker kept, its place in the
// YAML list and its declared type.
func (p *parser) workers(n *yaml.Node, path string) (out []WorkerSpec, refs []workerRef) {
	first := map[string]int{}
	for i, c := range p.list(n, path) {
		ip := index(path, i)
		w := WorkerSpec{ResetHistoryOnRun: true, Line: c.Line}
		var typ string
		if d := deref(c); d.Kind == yaml.ScalarNode && !isNull(d) {
			w.Name = p.requiredStr(c, ip)
		} else {
			f, ok := p.object(c, ip, workerKeys)
			if !ok {
				continue
			}
			if isNull(c) {
				p.add(c.Line, ip, "expected an agent name or a mapping with \"name\", got null")
				continue
			}
			ne, ok := f["name"]
			if !ok {
				p.add(c.Line, ip, "missing required field \"name\"")
				continue
			}
			w.Name = p.requiredStr(ne.val, ip+".name")
			if te, ok := f["type"]; ok {
				if typ, ok = p.word(te.val, ip+".type"); ok && !contains(workerKinds, typ) {
					p.add(te.val.Line, ip+".type", "unknown worker type %q%s", typ, orKnown(typ, workerKinds))
					typ = ""
				}
			}
			if be, ok := f["pass_message_history"]; ok {
				w.PassMessageHistory = p.boolean(be.val, ip+".pass_message_history", false)
			}
			if be, ok := f["reset_history_on_run"]; ok {
				w.ResetHistoryOnRun = p.boolean(be.val, ip+".reset_history_on_run", true)
			}
		}
		if w.Name == "" {
			continue
		}
		if line, dup := first[w.Name]; dup {
			p.add(c.Line, ip, "duplicate worker %q (first listed at line %d)", w.Name, line)
			continue
		}
		first[w.Name] = c.Line
		out = append(out, w)
		refs = append(refs, workerRef{index: i, typ: typ})
	}
	return out, refs
}

func (p *parser) team(e entry) *Team {
	path := "teams." + e.key
	t := &Team{Name: e.key, RequireAll: true, Line: e.line()}
	p.checkName(e.line(), path, e.key)
	f, ok := p.object(e.val, path, teamKeys)
	if !ok {
		return t
	}
	if fe, ok := f["mode"]; ok {
		if mode, ok := p.word(fe.val, path+".mode"); ok {
			t.Mode = mode
			if !contains(teamModes, mode) {
				p.add(fe.val.Line, path+".mode", "unknown team mode %q%s", mode, orKnown(mode, teamModes))
			}
		}
	} else {
		p.add(e.line(), path, "missing required field \"mode\" (parallel or sequential)")
	}
	if fe, ok := f["members"]; ok {
		items := p.list(fe.val, path+".members")
		if len(items) == 0 && (isNull(fe.val) || deref(fe.val).Kind == yaml.SequenceNode) { // else reported by list
			p.add(fe.val.Line, path+".members", "a team needs at least one member")
		}
		for i, c := range items {
			name := p.requiredStr(c, index(path+".members", i))
			t.Members = append(t.Members, name)
			p.memberLines[e.key] = append(p.memberLines[e.key], c.Line)
		}
	} else {
		p.add(e.line(), path, "missing required field \"members\"")
	}
	if fe, ok := f["shared_prompt"]; ok {
		t.SharedPrompt = p.prompt(fe.val, path+".shared_prompt")
	}
	if fe, ok := f["description"]; ok {
		t.Description = p.str(fe.val, path+".description")
	}
	if fe, ok := f["require_all"]; ok {
		t.RequireAll = p.boolean(fe.val, path+".require_all", true)
	}
	return t
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
