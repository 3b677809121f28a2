package spawn

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agentpool/agentpool/event"
)

// budgetTree is a root invocation with the given run budget and n
// children under an agent budget, as Spawn links them.
func budgetTree(run, agent Budget, n int) (*Invocation, []*Invocation) {
	root := &Invocation{}
	root.run = &root.rootRun
	root.LimitSpend("the run", run)
	mid := &Invocation{run: root.run, budgets: root.budgets}
	mid.LimitSpend("agent boss", agent)
	kids := make([]*Invocation, n)
	for i := range kids {
		kids[i] = &Invocation{run: root.run, budgets: mid.budgets}
	}
	return mid, kids
}

func spend(tokens int64) event.Usage {
	return event.Usage{InputTokens: tokens / 2, OutputTokens: tokens - tokens/2}
}

// Siblings racing for the last tokens: once the calls of a budget have
// shown their size, a call that does not fit beside one in flight waits
// for it instead of starting, and is refused once that call has spent the
// budget. Only one of three racing siblings starts a call.
func TestBudgetSiblingsRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		boss, kids := budgetTree(Budget{}, Budget{Tokens: 1000}, 3)
		first, err := boss.StartModelCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first.End(spend(600), 0) // 600 of 1000 spent; a call costs about 600

		var mu sync.Mutex
		var started []ModelCall
		var refused []error
		var wg sync.WaitGroup
		for _, k := range kids {
			wg.Go(func() {
				call, err := k.StartModelCall(ctx)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					refused = append(refused, err)
					return
				}
				started = append(started, call)
			})
		}
		synctest.Wait() // every sibling has started its call or waits
		mu.Lock()
		if len(started) != 1 || len(refused) != 0 {
			t.Fatalf("with 400 tokens left and calls of 600: %d calls started, %d refused; want 1 started, the others waiting", len(started), len(refused))
		}
		call := started[0]
		mu.Unlock()
		call.End(spend(600), 0) // 1200 spent: past the budget by one call
		wg.Wait()
		if len(started) != 1 || len(refused) != 2 {
			t.Fatalf("after the budget was spent: %d started, %d refused; want 1 and 2", len(started), len(refused))
		}
		for _, err := range refused {
			var be *BudgetError
			if !errors.As(err, &be) || !errors.Is(err, ErrBudget) {
				t.Fatalf("refusal %v (%T): want a *BudgetError", err, err)
			}
			if got, want := err.Error(), "budget of 1000 tokens for agent boss reached: 1200 used"; got != want {
				t.Errorf("refusal = %q, want %q", got, want)
			}
		}
	})
}

// Calls that fit beside each other all start: the wait is only for room.
// A budget is refused on what was spent, never on an estimate; the run's
// budget over the agent's stops the whole tree.
func TestBudgetNestedAndFitting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		boss, kids := budgetTree(Budget{Tokens: 500}, Budget{Tokens: 10000}, 3)
		c, err := boss.StartModelCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c.End(spend(100), 0)
		var calls []ModelCall
		for _, k := range kids { // 100 spent, 3 × 100 reserved: all fit in 500
			c, err := k.StartModelCall(ctx)
			if err != nil {
				t.Fatal(err)
			}
			calls = append(calls, c)
		}
		for _, c := range calls {
			c.End(spend(150), 0) // 550 spent
		}
		_, err = kids[0].StartModelCall(ctx)
		if got, want := errString(err), "budget of 500 tokens for the run reached: 550 used"; got != want {
			t.Fatalf("call after the run's budget: %q, want %q", got, want)
		}
		if _, err := boss.StartModelCall(ctx); !errors.Is(err, ErrBudget) {
			t.Fatalf("the boss's call after the run's budget: %v, want a budget error", err)
		}
	})
}

// A cost budget counts dollars; a model without a price spends none.
func TestBudgetCost(t *testing.T) {
	ctx := context.Background()
	boss, _ := budgetTree(Budget{}, Budget{CostUSD: 0.5}, 0)
	for _, cost := range []float64{0, 0.2, 0.4} {
		c, err := boss.StartModelCall(ctx)
		if err != nil {
			t.Fatalf("call after $%v: %v", cost, err)
		}
		c.End(spend(1000), cost)
	}
	_, err := boss.StartModelCall(ctx)
	if got, want := errString(err), "budget of $0.5 for agent boss reached: $0.6000 used"; got != want {
		t.Fatalf("call after the cost budget: %q, want %q", got, want)
	}
}

// A wait for room ends with the caller's context.
func TestBudgetWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boss, kids := budgetTree(Budget{}, Budget{Tokens: 100}, 1)
		c, _ := boss.StartModelCall(context.Background())
		c.End(spend(60), 0)
		inFlight, _ := boss.StartModelCall(context.Background())
		ctx, cancel := context.WithCancelCause(context.Background())
		done := make(chan error)
		go func() {
			_, err := kids[0].StartModelCall(ctx)
			done <- err
		}()
		synctest.Wait()
		want := errors.New("stop")
		cancel(want)
		if err := <-done; err != want {
			t.Fatalf("cancelled wait: %v, want %v", err, want)
		}
		inFlight.End(spend(10), 0)
	})
}

func TestBudgetCheck(t *testing.T) {
	for _, b := range []Budget{{Tokens: -1}, {CostUSD: -0.1}, {Tokens: MaxBudgetTokens + 1}, {CostUSD: 2e6}} {
		if b.Check() == nil {
			t.Errorf("%+v: no error", b)
		}
	}
	if err := (Budget{Tokens: 10, CostUSD: 1}).Check(); err != nil {
		t.Error(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// BenchmarkStartModelCall is what the budget check adds to one model
// call: a session without budgets (a nil check), and one under an agent's
// and the run's budgets (the run's lock, taken twice).
func BenchmarkStartModelCall(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		run, agent Budget
	}{{"none", Budget{}, Budget{}}, {"agent+run", Budget{Tokens: MaxBudgetTokens}, Budget{CostUSD: MaxBudgetCostUSD}}} {
		b.Run(c.name, func(b *testing.B) {
			_, kids := budgetTree(c.run, c.agent, 1)
			k := kids[0]
			u := spend(100)
			b.ReportAllocs()
			for b.Loop() {
				call, err := k.StartModelCall(ctx)
				if err != nil {
					b.Fatal(err)
				}
				call.End(u, 0)
			}
		})
	}
}
