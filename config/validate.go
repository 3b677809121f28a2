package config

import (
	"fmt"
	"strings"
)

// validate checks the cross references of a parsed manifest.
func (p *parser) validate(m *Manifest) {
	names := make([]string, 0, len(m.AgentOrder)+len(m.TeamOrder))
	names = append(names, m.AgentOrder...)
	names = append(names, m.TeamOrder...)
	defined := func(name string) bool {
		_, a := m.Agents[name]
		_, t := m.Teams[name]
		return a || t
	}
	unknown := func(name string) string {
		return fmt.Sprintf("unknown agent or team %q%s", name, suggest(name, names))
	}

	if m.DefaultAgent != "" && !defined(m.DefaultAgent) {
		p.add(p.defaultLine, "default_agent", "%s", unknown(m.DefaultAgent))
	}

	for _, an := range m.AgentOrder {
		a := m.Agents[an]
		refs := p.workerRefs[an]
		for i, w := range a.Workers {
			ref := refs[i]
			path := fmt.Sprintf("agents.%s.workers[%d]", an, ref.index)
			switch {
			case w.Name == an:
				p.add(w.Line, path, "agent %q cannot be its own worker", an)
			case !defined(w.Name):
				p.add(w.Line, path, "%s", unknown(w.Name))
			case ref.typ == "agent" && m.Agents[w.Name] == nil:
				p.add(w.Line, path, "worker %q is a team, not an agent (set type: team)", w.Name)
			case ref.typ == "team" && m.Teams[w.Name] == nil:
				p.add(w.Line, path, "worker %q is an agent, not a team (set type: agent)", w.Name)
			}
		}
	}

	for _, tn := range m.TeamOrder {
		t := m.Teams[tn]
		lines := p.memberLines[tn]
		for i, mem := range t.Members {
			path := fmt.Sprintf("teams.%s.members[%d]", tn, i)
			switch {
			case mem == "":
				// reported while parsing
			case mem == tn:
				p.add(lines[i], path, "team %q cannot contain itself", tn)
			case !defined(mem):
				p.add(lines[i], path, "%s", unknown(mem))
			}
		}
	}
	p.teamCycles(m)
	p.checkMCPNames(m)
	p.checkConnections(m, defined, unknown)
}

// teamCycles reports every cycle of team membership (through other teams)
// once, at the member entry that closes it.
func (p *parser) teamCycles(m *Manifest) {
	const (
		unvisited = iota
		active
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(tn string)
	visit = func(tn string) {
		state[tn] = active
		stack = append(stack, tn)
		for i, mem := range m.Teams[tn].Members {
			if _, isTeam := m.Teams[mem]; !isTeam || mem == tn {
				continue // self-membership is reported on its own
			}
			switch state[mem] {
			case unvisited:
				visit(mem)
			case active:
				var cycle []string
				for j := len(stack) - 1; j >= 0; j-- {
					if stack[j] == mem {
						cycle = append(cycle, stack[j:]...)
						break
					}
				}
				cycle = append(cycle, mem)
				p.add(p.memberLines[tn][i], fmt.Sprintf("teams.%s.members[%d]", tn, i),
					"team cycle: %s", strings.Join(cycle, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		state[tn] = done
	}
	for _, tn := range m.TeamOrder {
		if state[tn] == unvisited {
			visit(tn)
		}
	}
}
