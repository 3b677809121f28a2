// Parsing of the agents and teams sections: agents, tool approval, prompts,
// toolsets, workers and teams.

package config

import (
	pathpkg "path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
	// require_all's default follows the mode: each link of a chain feeds
	// the next, so a sequential team needs them all; the members of a
	// parallel team are independent, so by default it reports the ones that
	// failed and fails only when all did.
	t.RequireAll = t.Mode != ModeParallel
	if fe, ok := f["require_all"]; ok {
		t.RequireAll = p.boolean(fe.val, path+".require_all", t.RequireAll)
	}
	return t
}
