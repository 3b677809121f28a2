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
	p.teamBudgets(m)
	p.checkMCPNames(m)
	p.checkConnections(m, defined, unknown)
}

// teamBudgets reports every team that cannot run within limits.max_spawns:
// a run of a team takes one spawn for the team (when it is delegated to)
// and one per member, and a member team takes its own members' too. A team
// that does not fit would run only part of its members, so it is refused
// here rather than cut short at run time.
func (p *parser) teamBudgets(m *Manifest) {
	need := TeamSpawns(m.Teams)
	for _, tn := range m.TeamOrder {
		if n := need(tn); n > m.Limits.MaxSpawns {
			p.add(m.Teams[tn].Line, "teams."+tn,
				"team %q needs %d spawns per run (itself and %d members, counting members of member teams), more than limits.max_spawns (%d): split the team or raise limits.max_spawns",
				tn, n, n-1, m.Limits.MaxSpawns)
		}
	}
}

// TeamSpawns returns a function giving the spawns one run of a team takes
// from the run's budget (max_spawns): one for the team itself and one per
// member, members of member teams included. Members that are not teams
// count one each (what an agent spawns depends on its model). Cycles
// (reported on their own) are counted once around. Counts stop growing at
// maxTeamSpawns, far above any budget (teams of teams multiply).
func TeamSpawns(teams map[string]*Team) func(name string) int {
	memo := map[string]int{}
	var need func(name string) int
	need = func(name string) int {
		if n, ok := memo[name]; ok {
			return n
		}
		memo[name] = 1 // a cycle back to this team counts it once
		n := 1
		for _, mem := range teams[name].Members {
			if _, isTeam := teams[mem]; isTeam && mem != name {
				n = min(n+need(mem), maxTeamSpawns)
			} else {
				n = min(n+1, maxTeamSpawns)
			}
		}
		memo[name] = n
		return n
	}
	return need
}

// maxTeamSpawns bounds what TeamSpawns counts.
const maxTeamSpawns = 1 << 40

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
