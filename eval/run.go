package eval

import (
	"context"
	"sync"
	"time"

	"github.com/agentpool/agentpool/event"
)

// Outcome is what one run of a case did.
type Outcome struct {
	Answer   string
	Stop     event.StopReason
	Err      error // the run could not run or failed
	Usage    event.Usage
	CostUSD  float64
	Duration time.Duration
	// Tools are the names of the tools called anywhere in the tree.
	Tools []string
	// Children are the agent names of the child sessions spawned anywhere
	// in the tree.
	Children []string
}

// Runner runs one case (its files already in workspace) and returns what
// it did; Judge asks agent the prompt and returns its answer.
type Runner interface {
	Run(ctx context.Context, c Case, workspace string) Outcome
	Judge(ctx context.Context, agent, prompt, workspace string) (string, error)
}

// Check is one assertion's verdict.
type Check struct {
	Assertion string `json:"assertion"`
	Pass      bool   `json:"pass"`
	Reason    string `json:"reason,omitempty"`
}

// Result is one case's verdict.
type Result struct {
	Case     string        `json:"case"`
	Pass     bool          `json:"pass"`
	Error    string        `json:"error,omitempty"`
	Stop     string        `json:"stop_reason"`
	Answer   string        `json:"answer"`
	Tokens   int64         `json:"tokens"`
	CostUSD  float64       `json:"cost_usd"`
	Duration time.Duration `json:"duration_ns"`
	Checks   []Check       `json:"checks"`
}

// Progress is told of each case as it ends (from the case's goroutine,
// one call at a time).
type Progress func(done, total int, r Result)

// Run runs the suite's cases, at most s.Concurrency at once, each in a
// fresh workspace made by workspace (removed by the returned func), and
// returns their results in the suite's order.
func Run(ctx context.Context, s *Suite, r Runner, workspace func(Case) (string, func(), error), progress Progress) []Result {
	results := make([]Result, len(s.Cases))
	slots := make(chan struct{}, s.Concurrency)
	var (
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
	)
	for i, c := range s.Cases {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			res := runCase(ctx, s, r, c, workspace)
			results[i] = res
			mu.Lock()
			done++
			if progress != nil {
				progress(done, len(s.Cases), res)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return results
}

func runCase(ctx context.Context, s *Suite, r Runner, c Case, workspace func(Case) (string, func(), error)) Result {
	res := Result{Case: c.Name}
	dir, cleanup, err := workspace(c)
	if err != nil {
		res.Error = "workspace: " + err.Error()
		return res
	}
	defer cleanup()
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	out := r.Run(ctx, c, dir)
	res.Answer, res.Stop = out.Answer, string(out.Stop)
	res.Tokens = out.Usage.InputTokens + out.Usage.OutputTokens
	res.CostUSD, res.Duration = out.CostUSD, out.Duration
	res.Pass = out.Err == nil && (out.Stop == event.StopCompleted || out.Stop == event.StopMaxTokens)
	if out.Err != nil {
		res.Error = out.Err.Error()
	} else if !res.Pass {
		res.Error = "the run ended " + string(out.Stop)
	}
	for _, a := range c.Assert {
		ch := check(ctx, r, a, out, c, dir)
		res.Checks = append(res.Checks, ch)
		res.Pass = res.Pass && ch.Pass
	}
	return res
}
