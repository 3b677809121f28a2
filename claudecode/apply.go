package claudecode

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/agentpool/agentpool/config"
)

// Apply adds what was found to the manifest: the hook files after the
// manifest's hooks.settings (a file the manifest lists already is not
// added twice), and the agent files as agents. Of agents with one name
// the manifest's wins, then the project's, the user's, a plugin's. When
// an agent was added and the run's entry point is an agent without the
// subagent toolset, it gets it, so that its task tool reaches them. The
// notes say what was shadowed or added, one line each.
func (f *Found) Apply(m *config.Manifest) (notes []string) {
	have := map[string]bool{}
	for _, s := range m.Hooks.Settings {
		if abs, err := filepath.Abs(m.ResolvePath(s)); err == nil {
			have[abs] = true
		}
	}
	for _, h := range f.HookFiles() {
		if !have[h] {
			have[h] = true
			m.Hooks.Settings = append(m.Hooks.Settings, h)
		}
	}
	chosen := map[string]AgentFile{}
	var order []string
	for _, af := range f.Agents {
		name := af.Agent.Name
		if prev, ok := chosen[name]; ok {
			notes = append(notes, fmt.Sprintf("agent %s of %s (%s) wins over %s", name, af.Path, af.Scope, prev.Path))
		} else {
			order = append(order, name)
		}
		chosen[name] = af
	}
	added := 0
	for _, name := range order {
		af := chosen[name]
		if _, ok := m.Agents[name]; ok {
			notes = append(notes, fmt.Sprintf("agent %s of the manifest wins over %s", name, af.Path))
			continue
		}
		if _, ok := m.Teams[name]; ok {
			notes = append(notes, fmt.Sprintf("team %s of the manifest wins over the agent of %s", name, af.Path))
			continue
		}
		a := *af.Agent
		m.Agents[name] = &a
		m.AgentOrder = append(m.AgentOrder, name)
		added++
	}
	if added == 0 {
		return notes
	}
	if root := m.Agents[m.EntryPoint()]; root != nil && root.External == nil &&
		!slices.ContainsFunc(root.Toolsets, func(t config.ToolsetSpec) bool { return t.Type == config.ToolsetSubagent }) {
		root.Toolsets = append(root.Toolsets, config.ToolsetSpec{Type: config.ToolsetSubagent})
		notes = append(notes, fmt.Sprintf("agent %s gets the subagent toolset: its task tool reaches the agent files' agents", root.Name))
	}
	return notes
}
