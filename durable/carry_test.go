package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/team"
)

// scriptedTeam is the parallel team "crew" of n members, member i the
// agent worker-i, which answers "answer i" (once: a second model call
// would find no turn left).
func scriptedTeam(t *testing.T, st session.Store, n int) *pool.Pool {
	t.Helper()
	members := make([]string, n)
	agents := make([]pool.AgentSpec, n)
	for i := range members {
		members[i] = fmt.Sprintf("worker-%d", i)
		agents[i] = pool.AgentSpec{Name: members[i], Model: scripted(t, testmodel.Turn{Text: fmt.Sprintf("answer %d", i)})}
	}
	p, err := pool.Build(pool.Config{
		Agents:  agents,
		Teams:   []pool.TeamSpec{{Name: "crew", Mode: team.Parallel, Members: members}},
		Default: "crew",
		Limits:  config.Limits{MaxChildren: n, MaxSpawns: n + 10},
	}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// runContinued runs the root session of node under the test environment
// as the server would: a run that continues as new is run again with its
// next input, in a fresh environment, until one ends. The history length
// each run sees is 10 + 8 per member ended in it (about what the server
// counts). It returns the root, its end and the inputs of the runs.
func runContinued(t *testing.T, eng *Engine, p *pool.Pool, node, prompt string) (string, SessionOutput, []SessionInput) {
	t.Helper()
	ctx := context.Background()
	n, _ := p.Node(node)
	now := time.Now()
	root := session.Session{ID: id.Descending(id.Session), AgentName: node, SourceType: n.SourceType(), Title: "t", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := p.Store().CreateSession(ctx, root); err != nil {
		t.Fatal(err)
	}
	in := SessionInput{Session: root, RunID: id.Ascending(id.Run), Prompt: prompt}
	var runs []SessionInput
	for range 50 {
		runs = append(runs, in)
		var ts testsuite.WorkflowTestSuite
		env := ts.NewTestWorkflowEnvironment()
		env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
		env.SetTestTimeout(2 * time.Minute)
		eng.Register(env)
		ended := 0
		env.SetCurrentHistoryLength(10)
		env.SetOnChildWorkflowCompletedListener(func(*workflow.Info, converter.EncodedValue, error) {
			ended++
			env.SetCurrentHistoryLength(10 + 8*ended)
		})
		env.ExecuteWorkflow(WorkflowName, in)
		if !env.IsWorkflowCompleted() {
			t.Fatal("workflow did not complete")
		}
		err := env.GetWorkflowError()
		if can, ok := errors.AsType[*workflow.ContinueAsNewError](err); ok {
			var next SessionInput
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
				t.Fatal(err)
			}
			in = next
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var out SessionOutput
		if err := env.GetWorkflowResult(&out); err != nil {
			t.Fatal(err)
		}
		return root.ID, out, runs
	}
	t.Fatal("the workflow continued as new 50 times")
	return "", SessionOutput{}, nil
}

// A 60-member team whose workflow continues as new every ~15 members
// (threshold 130 history events, window 5): it runs in several runs, each
// member starts and ends once (its spawn_session_start and _end once in
// the team's log), the team's answer lists every member's, and the log is
// the stream of one run (one run_started, one stream_complete).
func TestWorkflowTeamContinuesAsNew(t *testing.T) {
	const members = 60
	st := memory.New()
	p := scriptedTeam(t, st, members)
	eng := engineFor(p)
	eng.MaxInFlight = 5
	eng.ContinueAfterEvents = 130
	root, out, runs := runContinued(t, eng, p, "crew", "go")
	if out.StopReason != event.StopCompleted {
		t.Fatalf("end = %+v", out)
	}
	if len(runs) < 3 {
		t.Errorf("the workflow ran %d times, want 3 at least (two continue-as-new)", len(runs))
	}
	for i := range members {
		if want := fmt.Sprintf("[worker-%d]\nanswer %d\n", i, i); !strings.Contains(out.Output+"\n", want) {
			t.Errorf("the team's answer lacks %q", want)
		}
	}
	ctx := context.Background()
	recs, err := st.Events(ctx, root, 0)
	if err != nil {
		t.Fatal(err)
	}
	starts, ends, kinds := map[string]int{}, map[string]int{}, map[string]int{}
	for _, r := range recs {
		kinds[string(r.Event.Kind())]++
		switch x := r.Event.(type) {
		case event.SpawnSessionStart:
			starts[x.ChildSessionID]++
		case event.SpawnSessionEnd:
			ends[x.ChildSessionID]++
			if x.StopReason != event.StopCompleted {
				t.Errorf("member %s ended %s", x.ChildSessionID, x.StopReason)
			}
		}
	}
	if len(starts) != members || len(ends) != members {
		t.Errorf("%d members started, %d ended, want %d", len(starts), len(ends), members)
	}
	for id, n := range starts {
		if n != 1 || ends[id] != 1 {
			t.Errorf("member %s started %d times, ended %d times", id, n, ends[id])
		}
	}
	if kinds["run_started"] != 1 || kinds["stream_complete"] != 1 {
		t.Errorf("the team's log has %d run_started and %d stream_complete, want one each (%v)", kinds["run_started"], kinds["stream_complete"], kinds)
	}
	rep, err := session.ReplayTree(ctx, st, root)
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]event.Event, len(rep))
	for i, r := range rep {
		evs[i] = r.Event
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Errorf("invariants: %v", err)
	}
	sess, err := st.GetSession(ctx, root)
	if err != nil || sess.Status != session.StatusCompleted {
		t.Errorf("the team's session: %+v, %v", sess.Status, err)
	}
	last := runs[len(runs)-1].Carry
	t.Logf("%d runs; the last run's carry: %d members, %d runs before it", len(runs), len(last.Members), last.Runs)
}

// The carry of a 10,000-member team stays well under Temporal's 2 MB
// payload bound: about 55 bytes per member.
func TestCarrySize(t *testing.T) {
	const members = 10_000
	c := Carry{Runs: 3, Started: time.Now(), FirstSeq: 12, Takes: []SpawnsOutput{{OK: true, Left: 20_010}}}
	for range members {
		c.Members = append(c.Members, CarriedMember{I: id.Descending(id.Session), S: event.StopCompleted})
	}
	in := SessionInput{Session: session.Session{ID: id.Descending(id.Session), AgentName: "crew"}, RunID: id.Ascending(id.Run), Prompt: "Answer.", Carry: &c}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the next run's input of a %d-member team: %d bytes (%.1f per member)", members, len(raw), float64(len(raw))/members)
	if len(raw) > 1<<20 {
		t.Errorf("the input is %d bytes, want at most 1 MiB", len(raw))
	}
}
