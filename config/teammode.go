// WolfHarness's team_mode: peer teams in which a lead, chosen among the
// lead-eligible agents, delegates to the member-eligible ones. agentpool
// maps it onto workers: each lead gets one worker (the tool
// ask_<member>(prompt)) per eligible member, so a delegation is a child
// session of the lead's run like every other (spawn). WolfHarness's team
// state around it (blackboard, inboxes, task list, state files) has no
// agentpool equivalent; its keys are accepted with a warning.

package config

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// teamModeKeys are the keys of WolfHarness's TeamModeConfig.
var teamModeKeys = []string{
	"enabled", "member_eligible", "lead_eligible", "defaults",
	"base_dir", "ttl_hours", "bounds", "blackboard", "message_max_bytes", "inbox_max_bytes",
	"protocol_template", "notice_delivery_mode", "broadcast_on_create", "max_watch_timeout",
	"idle_timeout", "poll_interval", "auto_urgent",
}

// teamModeIgnored are the keys of teamModeKeys that configure WolfHarness's
// team state, which agentpool does not keep.
var teamModeIgnored = teamModeKeys[4:]

var (
	teamDefaultsKeys = []string{"team_name", "members"}
	teamMemberKeys   = []string{"name", "agent", "instructions", "skills"}
)

// teamModeSpec is one team_mode mapping (the manifest's or an agent's
// overlay); the *Set fields say which keys it gives, for the overlay.
type teamModeSpec struct {
	line                   int
	enabled, enabledSet    bool
	lead, member           []string
	leadLines, memberLines []int
	leadSet, memberSet     bool
	defaults               []teamMember // defaults.members
	defaultsSet            bool
}

// teamMember is one entry of defaults.members.
type teamMember struct {
	agent string
	line  int
}

// teamMode reads a team_mode mapping at path.
func (p *parser) teamMode(e entry, path string) *teamModeSpec {
	f, ok := p.object(e.val, path, teamModeKeys)
	if !ok {
		return nil
	}
	t := &teamModeSpec{line: e.line()}
	if fe, ok := f["enabled"]; ok {
		t.enabled, t.enabledSet = p.boolean(fe.val, path+".enabled", false), true
	}
	if fe, ok := f["lead_eligible"]; ok {
		t.lead, t.leadLines = p.agentNames(fe.val, path+".lead_eligible")
		t.leadSet = true
	}
	if fe, ok := f["member_eligible"]; ok {
		t.member, t.memberLines = p.agentNames(fe.val, path+".member_eligible")
		t.memberSet = true
	}
	if fe, ok := f["defaults"]; ok {
		t.defaultsSet = true
		df, _ := p.object(fe.val, path+".defaults", teamDefaultsKeys)
		if me, ok := df["members"]; ok {
			for i, c := range p.list(me.val, path+".defaults.members") {
				ip := index(path+".defaults.members", i)
				mf, ok := p.object(c, ip, teamMemberKeys)
				if !ok {
					continue
				}
				ae, ok := mf["agent"]
				if !ok {
					p.add(c.Line, ip, "missing required field \"agent\"")
					continue
				}
				if a := p.requiredStr(ae.val, ip+".agent"); a != "" {
					t.defaults = append(t.defaults, teamMember{agent: a, line: ae.val.Line})
				}
				for _, k := range []string{"instructions", "skills"} {
					if ke, ok := mf[k]; ok && !empty(ke.val) {
						p.warn(ke.line(), join(ip, k), "ignored: a member's instructions and skills are not added to its system prompt; put them in the member agent's system_prompt")
					}
				}
			}
		}
	}
	var ignored []string
	for _, k := range teamModeIgnored {
		if _, ok := f[k]; ok {
			ignored = append(ignored, k)
		}
	}
	if len(ignored) > 0 {
		p.warn(e.line(), path, "ignored: %s (WolfHarness's team state: blackboard, inboxes, task list and their bounds); agentpool keeps no team state: a lead delegates to each member with ask_<member>, a child session of its run", strings.Join(ignored, ", "))
	}
	return t
}

// agentNames reads a list of agent names with their lines.
func (p *parser) agentNames(n *yaml.Node, path string) (names []string, lines []int) {
	for i, c := range p.list(n, path) {
		if s := p.requiredStr(c, index(path, i)); s != "" {
			names, lines = append(names, s), append(lines, c.Line)
		}
	}
	return names, lines
}

// overlay is the team mode of an agent: the manifest's (g) with the keys
// the agent's own (a) gives in their place; nil when there is none.
// WolfHarness's global enabled: false is a master switch.
func overlay(g, a *teamModeSpec) (t teamModeSpec, ok bool) {
	switch {
	case g == nil && a == nil:
		return t, false
	case a == nil:
		return *g, true
	case g == nil:
		return *a, true
	}
	t = *g
	if a.enabledSet {
		t.enabled = a.enabled && (!g.enabledSet || g.enabled)
	}
	if a.leadSet {
		t.lead, t.leadLines = a.lead, a.leadLines
	}
	if a.memberSet {
		t.member, t.memberLines = a.member, a.memberLines
	}
	if a.defaultsSet {
		t.defaults = a.defaults
	}
	return t, true
}

// applyTeamMode gives every lead its members as workers. An agent leads
// when its team mode is enabled and lead_eligible names it (an agent's own
// team_mode without lead_eligible makes that agent a lead); its members
// are the member_eligible agents other than itself. Unknown names are
// errors at their lines; defaults.members must be member-eligible, as in
// WolfHarness.
func (p *parser) applyTeamMode(m *Manifest) {
	if p.teamModeTop == nil && len(p.agentTeamMode) == 0 {
		return
	}
	type at struct {
		name string
		line int
	}
	checked := map[at]bool{} // names already checked (each list is read once per agent)
	check := func(name string, line int, path string) bool {
		a := m.Agents[name]
		if k := (at{name, line}); !checked[k] {
			checked[k] = true
			switch {
			case a != nil:
			case m.Teams[name] != nil:
				p.add(line, path, "%q is a team: team_mode's eligible agents are agents", name)
			default:
				p.add(line, path, "unknown agent %q%s", name, suggest(name, m.AgentOrder))
			}
		}
		return a != nil
	}
	leads := 0
	for _, an := range m.AgentOrder {
		own := p.agentTeamMode[an]
		t, ok := overlay(p.teamModeTop, own)
		if !ok {
			continue
		}
		path := "team_mode"
		if own != nil {
			path = "agents." + an + ".team_mode"
		}
		for i, mem := range t.member {
			check(mem, t.memberLines[i], "team_mode.member_eligible")
		}
		for i, l := range t.lead {
			check(l, t.leadLines[i], "team_mode.lead_eligible")
		}
		for _, d := range t.defaults {
			if check(d.agent, d.line, path+".defaults.members") && !slices.Contains(t.member, d.agent) {
				p.add(d.line, path+".defaults.members", "agent %q is not in member_eligible %v", d.agent, t.member)
			}
		}
		isLead := slices.Contains(t.lead, an) || (own != nil && own.enabledSet && !t.leadSet)
		if !t.enabled || !isLead {
			continue
		}
		leads++
		a := m.Agents[an]
		if x := a.External; x != nil && (x.A2A != nil || x.AGUI != nil) {
			// An ACP agent is served its workers over MCP; a remote
			// agent has no workers.
			p.add(t.line, path, "agent %q is a remote agent (type %s): a team_mode lead runs here, natively or over ACP", an, x.Provider)
			continue
		}
		for i, mem := range t.member {
			if mem == an || m.Agents[mem] == nil || slices.ContainsFunc(a.Workers, func(w WorkerSpec) bool { return w.Name == mem }) {
				continue
			}
			a.Workers = append(a.Workers, WorkerSpec{Name: mem, ResetHistoryOnRun: true, Line: t.memberLines[i]})
			p.workerRefs[an] = append(p.workerRefs[an], workerRef{index: len(a.Workers) - 1, typ: "agent"})
		}
	}
	if g := p.teamModeTop; g != nil && g.enabled && leads == 0 {
		p.warn(g.line, "team_mode", "no agent leads a team: name the leads in lead_eligible")
	}
}
