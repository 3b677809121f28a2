package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/internal/durablewire"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// The spawn budget (max_spawns) of a run is one count for every session of
// the run, as in this process, although each session is a workflow of its
// own that may run on any worker at the same time as its siblings: the
// count is kept on the record of the run's first session (MetaSpawnBudget),
// which every worker's store reaches, and the Spawns activity takes from it
// in one atomic update (session.Store.UpdateSession). The workflow learns
// from the activity's result whether a spawn was granted, so it refuses
// exactly as spawn does in this process, and on replay the same.

// MetaSpawnBudget is the metadata key, on the record of a run's first
// session, of the run's spawn budget: {"run": run id, "taken": spawns
// taken, "keys": the takes and returns counted, so that a retried activity
// does not count again}. A new run of the session starts a new count.
const MetaSpawnBudget = "spawn_budget"

// BudgetRef names where a run's spawn budget is kept: the record of the
// run's first session, for the run's id.
type BudgetRef struct {
	SessionID string `json:"session_id,omitempty"`
	RunID     string `json:"run_id,omitempty"`
}

// SpawnsInput takes N spawns of the budget of Budget (Limit of them), all
// or none, or gives -N back (always done). Key makes it happen once.
type SpawnsInput struct {
	Budget BudgetRef `json:"budget"`
	Key    string    `json:"key"`
	N      int       `json:"n"`
	Limit  int       `json:"limit"`
}

// SpawnsOutput says whether the spawns were taken, and how many were left
// before.
type SpawnsOutput struct {
	OK   bool `json:"ok"`
	Left int  `json:"left"`
}

// spawnBudget is MetaSpawnBudget's value.
type spawnBudget struct {
	Run   string          `json:"run"`
	Taken int             `json:"taken"`
	Keys  map[string]bool `json:"keys,omitempty"`
}

// readBudget reads the budget of run from a record's metadata (a value
// decoded from JSON, or as the store keeps it).
func readBudget(meta map[string]any, run string) spawnBudget {
	var b spawnBudget
	if raw, err := json.Marshal(meta[MetaSpawnBudget]); err == nil {
		_ = json.Unmarshal(raw, &b)
	}
	if b.Run != run {
		b = spawnBudget{Run: run}
	}
	if b.Keys == nil {
		b.Keys = map[string]bool{}
	}
	return b
}

// asMeta is b as plain JSON values, as every store keeps metadata.
func (b spawnBudget) asMeta() map[string]any {
	raw, _ := json.Marshal(b)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// Spawns takes or returns spawns of a run's budget (see SpawnsInput), once
// per key: a retry whose first attempt counted finds its key.
func (a *Activities) Spawns(ctx context.Context, in SpawnsInput) (SpawnsOutput, error) {
	var out SpawnsOutput
	err := a.Store.UpdateSession(ctx, in.Budget.SessionID, func(s *session.Session) {
		b := readBudget(s.Metadata, in.Budget.RunID)
		left := max(in.Limit-b.Taken, 0)
		switch {
		case b.Keys[in.Key]:
			out = SpawnsOutput{OK: true, Left: left}
			return
		case in.N > left:
			out = SpawnsOutput{Left: left}
			return
		}
		out = SpawnsOutput{OK: true, Left: left}
		b.Taken = max(b.Taken+in.N, 0)
		b.Keys[in.Key] = true
		if s.Metadata == nil {
			s.Metadata = map[string]any{}
		}
		s.Metadata[MetaSpawnBudget] = b.asMeta()
	})
	if errors.Is(err, session.ErrNotFound) {
		// No record keeps the budget: a retry would find none either.
		return SpawnsOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "NoBudget", err)
	}
	if err != nil {
		return SpawnsOutput{}, err
	}
	return out, a.Store.Flush(ctx)
}

var _ durablewire.SpawnBudget = (*wfEnv)(nil)

// TakeSpawns implements durablewire.SpawnBudget: the Spawns activity. A
// run continued as new is answered as its earlier runs were (carry.go).
func (e *wfEnv) TakeSpawns(ctx context.Context, inv *spawn.Invocation, n, limit int) (int, bool, error) {
	if out, ok := e.mover.take(); ok {
		return out.Left, out.OK, nil
	}
	out, err := e.spawns(e.wctx(ctx), SpawnsInput{Budget: e.budget, Key: e.NewID(ctx, "bgt"), N: n, Limit: limit})
	if err != nil {
		return 0, false, fmt.Errorf("spawn budget: %w", err)
	}
	e.mover.took(out)
	return out.Left, out.OK, nil
}

// ReturnSpawns implements durablewire.SpawnBudget: the Spawns activity, also
// after a cancellation of the workflow (a cancelled team gives back what
// it did not use).
func (e *wfEnv) ReturnSpawns(ctx context.Context, inv *spawn.Invocation, n int) {
	wc := e.wctx(ctx)
	if wc.Err() != nil {
		wc, _ = workflow.NewDisconnectedContext(wc)
	}
	_, _ = e.spawns(wc, SpawnsInput{Budget: e.budget, Key: e.NewID(ctx, "bgt"), N: -n})
}

func (e *wfEnv) spawns(wc workflow.Context, in SpawnsInput) (SpawnsOutput, error) {
	var out SpawnsOutput
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(wc, storeOptions), actSpawns, in).Get(wc, &out)
	return out, err
}
