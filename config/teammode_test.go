package config

import (
	"slices"
	"strings"
	"testing"
)

func workerNames(a *Agent) []string {
	var out []string
	for _, w := range a.Workers {
		out = append(out, w.Name)
	}
	return out
}

// team_mode.yaml: the leads get their eligible members as workers, an
// agent's own team_mode overlays the manifest's, and the team state keys
// are warned about.
func TestCorpusTeamMode(t *testing.T) {
	m := loadCorpus(t, "team_mode.yaml")
	if got := workerNames(m.Agents["coordinator"]); !slices.Equal(got, []string{"writer", "reviewer"}) {
		t.Errorf("coordinator workers = %v, want its members other than itself", got)
	}
	if got := workerNames(m.Agents["solo"]); !slices.Equal(got, []string{"writer"}) {
		t.Errorf("solo workers = %v, want its own member_eligible", got)
	}
	for _, n := range []string{"writer", "reviewer"} {
		if got := workerNames(m.Agents[n]); len(got) != 0 {
			t.Errorf("%s is no lead, got workers %v", n, got)
		}
	}
	want := []string{
		`testdata/agentpool/team_mode.yaml:23: team_mode: ignored: base_dir, bounds (WolfHarness's team state: blackboard, inboxes, task list and their bounds); agentpool keeps no team state: a lead delegates to each member with ask_<member>, a child session of its run`,
	}
	if got := warningTexts(m); !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTeamModeRules(t *testing.T) {
	tests := []struct {
		name, src string
		workers   map[string][]string
		issues    []string
	}{
		{"disabled", "agents:\n  a: {model: test}\n  b: {model: test}\nteam_mode: {enabled: false, lead_eligible: [a], member_eligible: [b]}\n",
			map[string][]string{"a": nil}, nil},
		{"master switch", "agents:\n  a:\n    model: test\n    team_mode: {enabled: true}\n  b: {model: test}\nteam_mode: {enabled: false, lead_eligible: [a], member_eligible: [b]}\n",
			map[string][]string{"a": nil}, nil},
		{"own team_mode leads", "agents:\n  a:\n    model: test\n    team_mode: {enabled: true, member_eligible: [b]}\n  b: {model: test}\n",
			map[string][]string{"a": {"b"}}, nil},
		{"worker kept once", "agents:\n  a:\n    model: test\n    workers: [b]\n  b: {model: test}\nteam_mode: {enabled: true, lead_eligible: [a], member_eligible: [b]}\n",
			map[string][]string{"a": {"b"}}, nil},
		{"unknown names", "agents:\n  a: {model: test}\n  b: {model: test}\nteams:\n  t: {members: [b]}\nteam_mode:\n  enabled: true\n  lead_eligible: [a]\n  member_eligible: [bb, t]\n",
			nil, []string{
				`agentpool.yaml:9: team_mode.member_eligible: unknown agent "bb" (did you mean "b"?)`,
				`agentpool.yaml:9: team_mode.member_eligible: "t" is a team: team_mode's eligible agents are agents`,
			}},
		{"defaults not eligible", "agents:\n  a: {model: test}\n  b: {model: test}\nteam_mode:\n  enabled: true\n  lead_eligible: [a]\n  defaults: {team_name: x, members: [{name: b1, agent: b}]}\n",
			nil, []string{`agentpool.yaml:7: team_mode.defaults.members: agent "b" is not in member_eligible []`}},
		{"typo", "agents:\n  a: {model: test}\nteam_mode: {enabled: true, lead_eligibl: [a]}\n",
			nil, []string{`agentpool.yaml:3: team_mode.lead_eligibl: unknown field "lead_eligibl" (did you mean "lead_eligible"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse("agentpool.yaml", []byte(tt.src))
			if tt.issues != nil {
				if err == nil {
					t.Fatal("loaded")
				}
				for _, want := range tt.issues {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("missing %q in:\n%v", want, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for an, want := range tt.workers {
				if got := workerNames(m.Agents[an]); !slices.Equal(got, want) {
					t.Errorf("%s workers = %v, want %v", an, got, want)
				}
			}
		})
	}
}

func TestTeamModeRemoteLead(t *testing.T) {
	src := "agents:\n  r: {type: a2a, url: \"http://127.0.0.1:1/\"}\n  b: {model: test}\nteam_mode: {enabled: true, lead_eligible: [r], member_eligible: [b]}\n"
	_, err := Parse("agentpool.yaml", []byte(src))
	want := `agentpool.yaml:4: team_mode: agent "r" is a remote agent (type a2a): a team_mode lead runs here, natively or over ACP`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %s", err, want)
	}
}
