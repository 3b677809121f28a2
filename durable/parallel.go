package durable

import (
	"context"

	"go.temporal.io/sdk/workflow"
)

// versionBoundedBranches is the workflow change after which Parallel
// keeps at most the window's branches alive. Before it, a team of 10,000
// members made 10,000 coroutines at once, of which all but the window's
// waited in Spawn for a slot; the SDK's dispatcher resumes every blocked
// coroutine on each of its passes (and walks its stack, to tell a yield
// during a panic), so each workflow task of the team cost time in
// proportion to the members still waiting: a 10,000-member team ran at
// 230-310 ms a member where 300 members ran at 50-125 (BENCHMARKS.md,
// "Large teams on Temporal"). Histories made before it replay as made.
const versionBoundedBranches = "agentpool.parallel-bounded-branches"

// Parallel implements spawn.Env: one workflow coroutine per branch, at
// most the window's alive at once (Engine.MaxInFlight) where the
// history has versionBoundedBranches; the next starts, in index order,
// when one ends. The members an earlier run of a team that continued as
// new started (carry.go) start after every other branch ended: each then
// waits only for the one activity that reads their answers.
func (e *wfEnv) Parallel(ctx context.Context, n int, fn func(ctx context.Context, i int)) {
	wc := e.wctx(ctx)
	wg := workflow.NewWaitGroup(wc)
	m := e.mover
	if m != nil {
		m.branches += n
	}
	live := 0
	start := func(i int) {
		live++
		wg.Add(1)
		workflow.Go(wc, func(c workflow.Context) {
			defer wg.Done()
			defer func() { live-- }()
			bctx := context.WithValue(ctx, branchKey{}, c)
			if m != nil {
				// The branch's index names its member in a carry.
				bctx = context.WithValue(bctx, memberKey{}, i)
				defer func() { m.finished++ }()
			}
			fn(bctx, i)
		})
	}
	if e.window <= 0 || workflow.GetVersion(wc, versionBoundedBranches, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		for i := range n {
			start(i)
		}
		wg.Wait(wc)
		return
	}
	e.bounded = true
	if m != nil {
		// A parallel team's members: created in batches (env.go), and
		// named by their index (mover.names) since version 2.
		v := workflow.GetVersion(wc, versionBatchedCreates, workflow.DefaultVersion, versionMemberNames)
		e.batched, m.named = v >= 1, v >= versionMemberNames
	}
	var carried []int
	for i := range n {
		if m != nil {
			if _, ok := m.carried(i); ok {
				carried = append(carried, i)
				continue
			}
		}
		if live >= e.window && ctx.Err() == nil {
			// Waiting members, as those waiting in Spawn: the run may
			// drain and continue as new meanwhile (mover.due).
			m.wait(1)
			_ = workflow.Await(wc, func() bool { return live < e.window || ctx.Err() != nil })
			m.wait(-1)
		}
		start(i)
	}
	if len(carried) > 0 {
		_ = workflow.Await(wc, func() bool { return live == 0 })
		// Their answers first, in this coroutine: each carried branch
		// then runs to its end without blocking. Thousands of branches
		// waiting for the one read made each pass of the dispatcher
		// resume them all, and the 10,000-member team's last workflow
		// task timed out again and again (10 s).
		m.textsDue = true
		m.text(wc, "")
		for _, i := range carried {
			start(i)
		}
	}
	wg.Wait(wc)
}

// wait counts branches that wait for a slot (d: +1 as one begins to wait,
// -1 as it stops). Nil-safe.
func (m *mover) wait(d int) {
	if m != nil {
		m.blocked += d
	}
}
