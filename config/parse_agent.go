// Parsing of the agents and teams sections: agents, tool approval, prompts,
// toolsets, workers and teams.

package config

import (
	pathpkg "path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// agents reads `agents:` in two passes: every agent's fields, then each
// agent with the fields it inherits (`inherits:`) under its own.
func (p *parser) agents(m *Manifest, e entry, d *yaml.Node) {
	es := p.entries(d, "agents")
	if len(es) == 0 {
		// AgentPool's `agents: {}` is a pool its program fills in code;
		// agentpool's pool is what the manifest says, so pool.New refuses
		// it until an agent is added.
		p.warn(e.val.Line, "agents", "no agents: AgentPool adds them from code, agentpool builds the pool from the manifest alone, so a run needs at least one agent here")
	}
	srcs := make(map[string]*agentSource, len(es))
	names := make([]string, 0, len(es))
	known := slices.Concat(agentKeys, agentPoolAgentKeys, llmlingAgentKeys)
	for _, ae := range es {
		path := "agents." + ae.key
		p.checkName(ae.line(), path, ae.key)
		src := &agentSource{e: ae}
		if native, kind := p.agentKind(ae, path); !native {
			src.f, src.external = map[string]entry{}, kind
		} else {
			src.f, src.ok = p.object(ae.val, path, known)
			(compatKeys{p}).llmlingKeys(src.f, path)
		}
		srcs[ae.key] = src
		names = append(names, ae.key)
	}
	for _, name := range names {
		src := srcs[name]
		a := &Agent{Name: name, Line: src.e.line()}
		if src.external != "" {
			p.external(a, src.external, src.e, "agents."+name)
		} else if src.ok {
			p.agent(a, p.inheritFields(name, srcs, names, nil))
		}
		m.Agents[name] = a
		m.AgentOrder = append(m.AgentOrder, name)
	}
}

// agent reads the fields of one agent.
func (p *parser) agent(a *Agent, f map[string]entry) {
	path := "agents." + a.Name
	if fe, ok := f["description"]; ok {
		a.Description = p.str(fe.val, path+".description")
	}
	if fe, ok := f["model"]; ok {
		a.Model = p.model(fe, path+".model")
	} else {
		a.Model = p.agentDefaultModel(a, path)
	}
	if fe, ok := f["system_prompt"]; ok {
		a.SystemPrompt = p.systemPrompt(fe.val, path+".system_prompt")
	}
	p.agentTools(a, f, path)
	if fe, ok := f["max_turns"]; ok {
		a.MaxTurns = p.count(fe.val, path+".max_turns")
	}
	if fe, ok := f["max_tool_calls_per_turn"]; ok {
		a.MaxToolCallsPerTurn = p.count(fe.val, path+".max_tool_calls_per_turn")
	}
	if fe, ok := f["tool_approval"]; ok {
		a.ToolApproval = p.toolApproval(fe.val, path+".tool_approval")
	}
	if fe, ok := f["budget"]; ok {
		a.Budget = p.spendBudget(fe.val, path+".budget")
	}
	if fe, ok := f["mcp_servers"]; ok {
		a.MCPServers = p.mcpServers(fe.val, path+".mcp_servers")
	}
	if fe, ok := f["team_mode"]; ok && !empty(fe.val) {
		if t := p.teamMode(fe, path+".team_mode"); t != nil {
			if p.agentTeamMode == nil {
				p.agentTeamMode = map[string]*teamModeSpec{}
			}
			p.agentTeamMode[a.Name] = t
		}
	}
	p.agentCompat(a, f, path)
}

// agentTools reads the toolsets and workers of an agent (native or
// external).
func (p *parser) agentTools(a *Agent, f map[string]entry, path string) {
	// AgentPool keeps `tools:` (functions) and `toolsets:` (groups) apart;
	// here both name toolsets, merged in file order.
	var l toolsetList
	for _, k := range byLine(f, "tools", "toolsets") {
		p.toolsets(f[k].val, join(path, k), &l)
	}
	if fe, ok := f["capabilities"]; ok {
		(compatKeys{p}).capabilityToolsets(fe.val, join(path, "capabilities"), &l)
	}
	a.Toolsets = l.out
	if fe, ok := f["workers"]; ok {
		a.Workers, p.workerRefs[a.Name] = p.workers(fe.val, path+".workers")
	}
	for _, n := range l.workers {
		ws, refs := p.workers(n, path+".toolsets.workers")
		for i := range refs {
			refs[i].index += len(a.Workers)
		}
		a.Workers = append(a.Workers, ws...)
		p.workerRefs[a.Name] = append(p.workerRefs[a.Name], refs...)
	}
	fe, hasMCP := f["mcp_servers"]
	(compatKeys{p}).warnPython(a, &l, hasMCP && !empty(fe.val), path)
}

// byLine returns those of keys present in f, in the order of their lines.
func byLine(f map[string]entry, keys ...string) []string {
	var out []string
	for _, k := range keys {
		if _, ok := f[k]; ok {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return f[a].line() - f[b].line() })
	return out
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
			p.add(c.Line, ip, "duplicate worker %q (first listed at line %s)", w.Name, p.lineRef(line))
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
	f, ok := p.object(e.val, path, append(slices.Clip(teamKeys), agentPoolTeamKeys...))
	if !ok {
		return t
	}
	mode, hasMode := f["mode"]
	if tm, ok := f["team_mode"]; ok {
		// team_mode is accepted as another spelling of mode.
		if hasMode {
			p.add(tm.line(), path+".team_mode", "use either \"mode\" or \"team_mode\", not both")
		}
		mode, hasMode = tm, true
	}
	if hasMode {
		mp := join(path, mode.key)
		if m, ok := p.word(mode.val, mp); ok {
			t.Mode = m
			if !contains(teamModes, m) {
				p.add(mode.val.Line, mp, "unknown team mode %q%s", m, orKnown(m, teamModes))
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
	// require_all's default follows the mode: each link of a chain feeds
	// the next, so a sequential team needs them all; the members of a
	// parallel team are independent, so by default it reports the ones that
	// failed and fails only when all did.
	t.RequireAll = t.Mode != ModeParallel
	if fe, ok := f["require_all"]; ok {
		t.RequireAll = p.boolean(fe.val, path+".require_all", t.RequireAll)
	}
	p.teamCompat(t, f, path)
	return t
}
