// What the Temporal engine does not do yet, said where the manifest asks
// for it.

package config

// engineLimits warns of manifest settings the chosen engine ignores, so
// that a budget meant to stop a runaway subtree is never dropped without
// a word: on Temporal budgets are not enforced (docs/control.md, Budgets,
// "Not done").
func (p *parser) engineLimits(m *Manifest) {
	if !m.Execution.Temporal() {
		return
	}
	for _, an := range m.AgentOrder {
		a := m.Agents[an]
		if a == nil || (a.Budget.Tokens == 0 && a.Budget.CostUSD == 0) {
			continue
		}
		p.warn(a.Line, "agents."+an+".budget",
			"not enforced with execution.engine: temporal (budgets are kept in this process only; docs/control.md): run in process to enforce it")
	}
}
