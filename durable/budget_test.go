package durable

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/team"
)

// The Spawns activity takes all or none, counts a key once (a retry whose
// first attempt took does not take again), gives back, and counts a new
// run of the session from zero.
func TestSpawnsActivity(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_1", AgentName: "a", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: st}
	run1 := BudgetRef{SessionID: "ses_1", RunID: "run_1"}
	take := func(ref BudgetRef, key string, n int) SpawnsOutput {
		t.Helper()
		out, err := a.Spawns(ctx, SpawnsInput{Budget: ref, Key: key, N: n, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := take(run1, "k1", 2); !out.OK || out.Left != 3 {
		t.Fatalf("take 2 of 3: %+v", out)
	}
	if out := take(run1, "k1", 2); !out.OK {
		t.Fatalf("retry of k1: %+v", out)
	}
	if out := take(run1, "k2", 2); out.OK || out.Left != 1 {
		t.Fatalf("take 2 with 1 left: %+v, want refused with 1 left", out)
	}
	if out := take(run1, "k3", -1); !out.OK {
		t.Fatalf("give 1 back: %+v", out)
	}
	_ = take(run1, "k3", -1) // a retry gives nothing more back
	if out := take(run1, "k4", 2); !out.OK || out.Left != 2 {
		t.Fatalf("take 2 with 2 left: %+v", out)
	}
	if out := take(run1, "k5", 1); out.OK || out.Left != 0 {
		t.Fatalf("take past the budget: %+v", out)
	}
	if out := take(BudgetRef{SessionID: "ses_1", RunID: "run_2"}, "k6", 3); !out.OK || out.Left != 3 {
		t.Fatalf("a new run's budget: %+v", out)
	}
	var ae *temporal.ApplicationError
	if _, err := a.Spawns(ctx, SpawnsInput{Budget: BudgetRef{SessionID: "ses_none", RunID: "run_1"}, Key: "k7", N: 1, Limit: 3}); !errors.As(err, &ae) || !ae.NonRetryable() {
		t.Fatalf("the budget of no record: %v, want a non-retryable error", err)
	}
}

// teamsPool: boss asks for two parallel teams of two at once, under a
// budget of three spawns: one team and its members fit, the other team's
// reservation is refused, as in this process.
func teamsPool(t *testing.T, st session.Store) *pool.Pool {
	t.Helper()
	boss := scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{
			{Name: "task", Args: map[string]any{"agent_or_team": "duo", "prompt": "one"}},
			{Name: "task", Args: map[string]any{"agent_or_team": "duo", "prompt": "two"}},
		}},
		testmodel.Turn{Text: "done"},
	)
	p, err := pool.Build(pool.Config{
		Agents: []pool.AgentSpec{
			{Name: "boss", Model: boss, Builtin: []string{"subagent"}},
			{Name: "worker", Model: scripted(t, testmodel.Turn{Text: "ok", Delay: 300 * time.Millisecond})},
		},
		Teams:   []pool.TeamSpec{{Name: "duo", Mode: team.Parallel, Members: []string{"worker", "worker"}}},
		Default: "boss",
		Limits:  config.Limits{MaxSpawns: 4},
	}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// A team's reservation comes from the run's one budget under the engine
// too: two teams started at once under max_spawns 4 (two team sessions
// take two, leaving two) run one team's members and refuse the other's.
func TestWorkflowTeamReservationIsExact(t *testing.T) {
	st := memory.New()
	root, out, evs := runWorkflow(t, teamsPool(t, st), "boss", "go", nil)
	if out.StopReason != event.StopCompleted {
		t.Fatalf("end = %+v", out)
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	ref := memory.New()
	sink, got := eventtest.Collect()
	res, err := teamsPool(t, ref).RunSink(context.Background(), pool.RunRequest{Node: "boss", Prompt: "go"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	s, r := countSpawns(root, evs)
	ws, wr := countSpawns(res.SessionID, got())
	if s != 4 || s != ws || r != wr || r == 0 {
		t.Errorf("temporal: %d spawns, %d refused; in process: %d, %d; want 4 and the same refusals", s, r, ws, wr)
	}
	if n := descendants(t, st, root); n != 4 {
		t.Errorf("child sessions stored: %d, want 4", n)
	}
}
