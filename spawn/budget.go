package spawn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/agentpool/agentpool/event"
)

// Budgets (docs/control.md, Budgets): a cap on what a subtree of sessions
// spends on model calls, in tokens (input + output) and in US dollars. A
// budget belongs to a session (an agent's `budget:`, set by the agent's
// run with LimitSpend) or to a whole run (the root's, pool.RunRequest); it
// counts every model call of the session and of its descendants in this
// run. Before each model call the agent asks StartModelCall: when a budget
// over the session has been reached the call does not start and the
// session ends with stop reason budget.
//
// Check and reservation are one step under the run's budget lock, so that
// sessions racing for the last tokens do not all start a call: each call
// in flight reserves an estimate (the largest call its budgets have seen,
// at least one token), and a call whose estimate does not fit beside the
// calls in flight waits for them to end, then looks again. A call is only
// refused when what was spent has reached the budget, never on an
// estimate. A call that starts may still spend past the budget (its size
// is known when it ends): the overshoot is bounded by one call in flight
// per running session of the subtree.

// Bounds of a Budget's fields: a larger value is a mistake, not a cap.
const (
	MaxBudgetTokens  = 1 << 40 // about 1.1e12 tokens
	MaxBudgetCostUSD = 1e6
)

// Budget caps the spend of a subtree of sessions. A zero field is no cap.
type Budget struct {
	Tokens  int64   // input + output tokens of every model call
	CostUSD float64 // cost in US dollars, of the models that have a price
}

// IsZero reports whether b caps nothing.
func (b Budget) IsZero() bool { return b.Tokens == 0 && b.CostUSD == 0 }

// Check reports a budget that is negative, not a number or absurdly
// large (MaxBudgetTokens, MaxBudgetCostUSD).
func (b Budget) Check() error {
	switch {
	case b.Tokens < 0:
		return fmt.Errorf("budget tokens %d: must not be negative", b.Tokens)
	case b.Tokens > MaxBudgetTokens:
		return fmt.Errorf("budget tokens %d: at most %d", b.Tokens, int64(MaxBudgetTokens))
	case math.IsNaN(b.CostUSD) || math.IsInf(b.CostUSD, 0):
		return fmt.Errorf("budget cost_usd %v: not a number", b.CostUSD)
	case b.CostUSD < 0:
		return fmt.Errorf("budget cost_usd %v: must not be negative", b.CostUSD)
	case b.CostUSD > MaxBudgetCostUSD:
		return fmt.Errorf("budget cost_usd %v: at most %v", b.CostUSD, MaxBudgetCostUSD)
	}
	return nil
}

// ErrBudget is the error (errors.Is) of a session stopped by a budget.
var ErrBudget = errors.New("budget reached")

// BudgetError says which budget stopped a session and what was spent.
type BudgetError struct {
	Owner  string  // "agent NAME" or "the run"
	Tokens bool    // the tokens cap was reached (else the cost cap)
	Limit  Budget  // the budget
	Used   int64   // tokens spent under it
	Cost   float64 // cost spent under it
}

func (e *BudgetError) Error() string {
	if e.Tokens {
		return fmt.Sprintf("budget of %d tokens for %s reached: %d used", e.Limit.Tokens, e.Owner, e.Used)
	}
	return fmt.Sprintf("budget of $%.4g for %s reached: $%.4f used", e.Limit.CostUSD, e.Owner, e.Cost)
}

// Is makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// budgetAccount is the spend of one budget; its fields are under the
// run's budgetGate lock.
type budgetAccount struct {
	owner string
	limit Budget
	// spent, reserved by the calls in flight, and the largest call seen
	// (the estimate of the next one).
	tokens, resTokens, callTokens int64
	cost, resCost, callCost       float64
	// inFlight counts the calls that hold a reservation: the reserved
	// sums go back to exactly zero with it (float sums would drift, and a
	// wait on a drifted reservation would never be woken).
	inFlight int
}

// budgetScope is the chain of budgets over a session: its own, then its
// ancestors'. Immutable once made; children share their parent's.
type budgetScope struct {
	acct *budgetAccount
	up   *budgetScope
}

// budgetGate is the run's one lock over every budget account of the run,
// so that a call checks and reserves on all its budgets in one step.
type budgetGate struct {
	mu sync.Mutex
	// settled is closed (and cleared) when a call in flight ends: the
	// calls waiting for room look again. Made by the first waiter.
	settled chan struct{}
}

// LimitSpend sets a budget on the subtree of inv's session (its own model
// calls and its descendants'), besides the budgets over it. owner names
// it in the error that stops a session ("agent NAME", "the run"). Call it
// before the session makes model calls or spawns; a zero budget does
// nothing, and so does a run under an Env (a durable engine: budgets are
// not kept across its workflows).
func (inv *Invocation) LimitSpend(owner string, b Budget) {
	if b.IsZero() || inv.Env != nil {
		return
	}
	inv.budgets = &budgetScope{acct: &budgetAccount{owner: owner, limit: b}, up: inv.budgets}
}

// ModelCall is a model call admitted by StartModelCall; End it with what
// the call spent, also when it failed.
type ModelCall struct {
	scope  *budgetScope // nil: no budget over the session
	gate   *budgetGate
	tokens int64   // reserved on every budget of scope
	cost   float64 // likewise
}

// StartModelCall admits one model call of inv's session against every
// budget over it: it returns a *BudgetError (errors.Is ErrBudget) when one
// has been reached, waits while the calls in flight leave no room for
// this one's estimate, and otherwise reserves the estimate until End. A
// session without budgets costs a nil check. ctx ends a wait with its
// cause.
func (inv *Invocation) StartModelCall(ctx context.Context) (ModelCall, error) {
	sc := inv.budgets
	if sc == nil {
		return ModelCall{}, nil
	}
	g := &inv.run.budget
	for {
		g.mu.Lock()
		call, wait, err := admit(sc)
		if err != nil {
			g.mu.Unlock()
			return ModelCall{}, err
		}
		if !wait {
			for s := sc; s != nil; s = s.up {
				s.acct.resTokens += call.tokens
				s.acct.resCost += call.cost
				s.acct.inFlight++
			}
			g.mu.Unlock()
			call.gate = g
			return call, nil
		}
		if g.settled == nil {
			g.settled = make(chan struct{})
		}
		ch := g.settled
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ModelCall{}, context.Cause(ctx)
		}
	}
}

// admit decides on a call under the budgets of sc (the gate's lock held):
// a refusal, a wait (no room beside the calls in flight), or the call to
// reserve.
func admit(sc *budgetScope) (call ModelCall, wait bool, err error) {
	call = ModelCall{scope: sc, tokens: 1}
	for s := sc; s != nil; s = s.up {
		call.tokens = max(call.tokens, s.acct.callTokens)
		call.cost = max(call.cost, s.acct.callCost)
	}
	for s := sc; s != nil; s = s.up {
		a := s.acct
		if t := a.limit.Tokens; t > 0 {
			if a.tokens >= t {
				return ModelCall{}, false, &BudgetError{Owner: a.owner, Tokens: true, Limit: a.limit, Used: a.tokens, Cost: a.cost}
			}
			if a.inFlight > 0 && a.tokens+a.resTokens+call.tokens > t {
				return ModelCall{}, true, nil
			}
		}
		if c := a.limit.CostUSD; c > 0 {
			if a.cost >= c {
				return ModelCall{}, false, &BudgetError{Owner: a.owner, Limit: a.limit, Used: a.tokens, Cost: a.cost}
			}
			if a.inFlight > 0 && a.cost+a.resCost+call.cost > c {
				return ModelCall{}, true, nil
			}
		}
	}
	return call, false, nil
}

// End counts what the call spent (u, cost) on every budget over its
// session, gives back its reservation and wakes the calls waiting for
// room.
func (c ModelCall) End(u event.Usage, cost float64) {
	if c.scope == nil {
		return
	}
	tokens := u.InputTokens + u.OutputTokens
	g := c.gate
	g.mu.Lock()
	for s := c.scope; s != nil; s = s.up {
		a := s.acct
		a.resTokens -= c.tokens
		a.resCost -= c.cost
		if a.inFlight--; a.inFlight == 0 {
			a.resTokens, a.resCost = 0, 0
		}
		a.tokens += tokens
		a.cost += cost
		a.callTokens = max(a.callTokens, tokens)
		a.callCost = max(a.callCost, cost)
	}
	if g.settled != nil {
		close(g.settled)
		g.settled = nil
	}
	g.mu.Unlock()
}
