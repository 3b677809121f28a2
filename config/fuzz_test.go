package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse: no input makes the manifest loader panic or hang; an error
// names the file; a manifest that validates is consistent (every name it
// refers to exists, limits are set).
func FuzzParse(f *testing.F) {
	f.Add(DefaultYAML())
	for _, pattern := range []string{"testdata/*.yaml", "../examples/*.yaml", "../examples/*/agentpool.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	for _, s := range []string{
		"", "{}", "null", "[]", "agents:", "agents: {a: {model: test}}",
		"agents: {a: {model: {type: scripted, turns: [x, {error: e}, {tool_calls: [{name: t, args: {k: [1, {a: b}]}}]}]}}}",
		"agents: &a {x: *a}",
		"agents: {w: {model: {type: test, tool_args: &x {t: {k: *x}}}}}",
		"x: &a [l, l, l]\ny: &b [*a, *a, *a]\nz: &c [*b, *b, *b]\nagents: {w: {model: {type: test, tool_args: {t: {k: *c}}}}}",
		"agents: {a: {model: test, workers: [a, {name: a, pass_message_history: yes}]}}\nteams: {t: {members: [a, t]}}",
		"limits: {max_depth: -1, spawn_timeout: 1ns, max_turns: 99999999999999999999}",
		"agents: {a: {model: test, tool_approval: {'[': ask, '*': deny}}}",
		"\t\x00\xff: [",
		"agents:\n  a:\n    model: openai:gpt\n    system_prompt: [one, two]\n    toolsets: [{type: subagent}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz.yaml", data)
		if err != nil {
			if msg := err.Error(); msg == "" || (utf8.Valid(data) && !strings.Contains(msg, "fuzz.yaml")) {
				t.Fatalf("error without the file name: %q", msg)
			}
			return
		}
		if m.Limits.MaxDepth <= 0 || m.Limits.MaxChildren <= 0 || m.Limits.MaxSpawns <= 0 || m.Limits.MaxTurns <= 0 || m.Limits.SpawnTimeout < 0 {
			t.Fatalf("limits without defaults: %+v", m.Limits)
		}
		if len(m.AgentOrder) != len(m.Agents) || len(m.TeamOrder) != len(m.Teams) {
			t.Fatalf("orders and maps differ: %d/%d agents, %d/%d teams", len(m.AgentOrder), len(m.Agents), len(m.TeamOrder), len(m.Teams))
		}
		node := func(name string) bool {
			_, a := m.Agents[name]
			_, tm := m.Teams[name]
			return a || tm
		}
		if ep := m.EntryPoint(); ep != "" && !node(ep) {
			t.Fatalf("entry point %q is no node", ep)
		}
		for _, name := range m.AgentOrder {
			a := m.Agents[name]
			if a == nil {
				t.Fatalf("agent %q in the order but not in the map", name)
			}
			for _, w := range a.Workers {
				if !node(w.Name) {
					t.Fatalf("agent %s: worker %q is no node", name, w.Name)
				}
			}
		}
		for _, name := range m.TeamOrder {
			tm := m.Teams[name]
			if tm == nil {
				t.Fatalf("team %q in the order but not in the map", name)
			}
			for _, member := range tm.Members {
				if !node(member) {
					t.Fatalf("team %s: member %q is no node", name, member)
				}
			}
		}
	})
}
