package config

import "go.yaml.in/yaml/v3"

// Budget is an agent's `budget:` (docs/control.md, Budgets): what each
// session of the agent may spend with its whole subtree, in tokens (input
// plus output) and in US dollars. A zero field is no cap. The runtime's
// spawn.Budget has the same fields and bounds.
type Budget struct {
	Tokens  int64
	CostUSD float64
}

// Bounds of a budget: a larger value is a mistake rather than a cap
// (spawn.MaxBudgetTokens, spawn.MaxBudgetCostUSD).
const (
	MaxBudgetTokens  = 1 << 40
	MaxBudgetCostUSD = 1e6
)

// spendBudget reads `budget: {tokens: N, cost_usd: X}`.
func (p *parser) spendBudget(n *yaml.Node, path string) Budget {
	var b Budget
	f, _ := p.object(n, path, []string{"tokens", "cost_usd"})
	if e, ok := f["tokens"]; ok {
		b.Tokens = p.budgetTokens(e.val, path+".tokens")
	}
	if e, ok := f["cost_usd"]; ok {
		v, ok := p.number(e.val, path+".cost_usd")
		switch {
		case !ok:
		case v < 0:
			p.add(e.line(), path+".cost_usd", "must not be negative, got %v", v)
		case v > MaxBudgetCostUSD:
			p.add(e.line(), path+".cost_usd", "at most %v US dollars, got %v", float64(MaxBudgetCostUSD), v)
		default:
			b.CostUSD = v
		}
	}
	return b
}

// budgetTokens reads a count of tokens of a budget, bounded.
func (p *parser) budgetTokens(n *yaml.Node, path string) int64 {
	v := p.count(n, path)
	if v > MaxBudgetTokens {
		p.add(n.Line, path, "at most %d tokens, got %d", int64(MaxBudgetTokens), v)
		return 0
	}
	return int64(v)
}
