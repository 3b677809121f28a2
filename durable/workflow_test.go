package durable

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/team"
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(envWorker); cfg != "" {
		os.Exit(runTestWorker(cfg))
	}
	goleak.VerifyTestMain(m,
		// The test environment's own timers and the SDK's caches.
		goleak.IgnoreAnyFunction("go.temporal.io/sdk/internal.(*sharedWorkerStopper).stopWorker"),
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.Cleanup(func(code int) {
			if cli.path != "" {
				os.RemoveAll(filepath.Dir(cli.path))
			}
			os.Exit(code)
		}),
	)
}

func scripted(t *testing.T, turns ...testmodel.Turn) *testmodel.Model {
	t.Helper()
	m, err := testmodel.New(testmodel.Config{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// delegatingPool: boss asks the worker, then asks the team (two members
// in parallel), then answers with what it got.
func delegatingPool(t *testing.T, st session.Store) *pool.Pool {
	t.Helper()
	boss := scripted(t,
		testmodel.Turn{Text: "asking", ToolCalls: []testmodel.ToolCall{{Name: "ask_worker", Args: map[string]any{"prompt": "what is 6*7?"}}}},
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "task", Args: map[string]any{"agent_or_team": "duo", "prompt": "check it"}}}},
		testmodel.Turn{Text: "the answer is 42"},
	)
	p, err := pool.Build(pool.Config{
		Agents: []pool.AgentSpec{
			{Name: "boss", Model: boss, Workers: []pool.WorkerSpec{{Name: "worker"}}, Builtin: []string{"subagent"}},
			{Name: "worker", Model: scripted(t, testmodel.Turn{Text: "42"})},
			{Name: "checker", Model: scripted(t, testmodel.Turn{Text: "checked"})},
		},
		Teams:   []pool.TeamSpec{{Name: "duo", Mode: team.Parallel, Members: []string{"worker", "checker"}}},
		Default: "boss",
	}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func engineFor(p *pool.Pool) *Engine {
	return &Engine{Activities: Activities{Store: p.Store(), Lookup: p.Node, Runtime: p.Runtime()}, Names: p.NodeNames, Limits: p.Runtime().Limits(), TaskQueue: "test"}
}

// runWorkflow runs the root session of node under the test environment
// and returns its end and the root's stream rebuilt from the store.
func runWorkflow(t *testing.T, p *pool.Pool, node, prompt string, setup func(*testsuite.TestWorkflowEnvironment)) (string, SessionOutput, []event.Event) {
	t.Helper()
	return runEngine(t, engineFor(p), p, node, prompt, setup)
}

// runEngine is runWorkflow with the engine the workers run.
func runEngine(t *testing.T, eng *Engine, p *pool.Pool, node, prompt string, setup func(*testsuite.TestWorkflowEnvironment)) (string, SessionOutput, []event.Event) {
	t.Helper()
	ctx := context.Background()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	// This machine's load can starve a workflow task for more than the
	// default second.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.SetTestTimeout(2 * time.Minute)
	eng.Register(env)
	n, _ := p.Node(node)
	now := time.Now()
	root := session.Session{ID: id.Descending(id.Session), AgentName: node, SourceType: n.SourceType(), Title: "t", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := p.Store().CreateSession(ctx, root); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(env)
	}
	env.ExecuteWorkflow(WorkflowName, SessionInput{Session: root, RunID: id.Ascending(id.Run), Prompt: prompt})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out SessionOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	rep, err := session.ReplayTree(ctx, p.Store(), root.ID)
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]event.Event, len(rep))
	for i, r := range rep {
		evs[i] = r.Event
	}
	return root.ID, out, evs
}

// shape is a stream as the depth and kind of each event (ids and times
// differ from run to run).
func shape(root string, evs []event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		sid, inner := event.Unwrap(root, e)
		d := 0
		if s, ok := e.(event.Subagent); ok {
			d = len(s.Path)
		}
		_ = sid
		out[i] = fmt.Sprintf("%d:%s", d, inner.Kind())
	}
	return out
}

func TestWorkflowRunsTheLoopAsInProcess(t *testing.T) {
	p := delegatingPool(t, memory.New())
	root, out, evs := runWorkflow(t, p, "boss", "go", nil)
	if out.StopReason != event.StopCompleted || out.Output != "the answer is 42" {
		t.Fatalf("end = %+v", out)
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	// The same pool in this process: the same stream, but for the order of
	// the parallel members' events.
	ref := delegatingPool(t, memory.New())
	sink, got := eventtest.Collect()
	res, err := ref.RunSink(context.Background(), pool.RunRequest{Node: "boss", Prompt: "go"}, sink)
	if err != nil || res.Result.Output != out.Output {
		t.Fatalf("in process: %+v, %v", res.Result, err)
	}
	a, b := shape(root, evs), shape(res.SessionID, got())
	if strings.Join(sorted(a), ",") != strings.Join(sorted(b), ",") {
		t.Errorf("streams differ:\ntemporal:   %v\nin process: %v", a, b)
	}
	// Every session ended once, completed, with the totals rolled up.
	all, err := session.Subtree(context.Background(), p.Store(), root)
	if err != nil || len(all) != 5 { // boss, worker, duo, worker, checker
		t.Fatalf("subtree: %d sessions, %v", len(all), err)
	}
	for _, s := range all {
		if s.Status != session.StatusCompleted {
			t.Errorf("session %s (%s): %s", s.ID, s.AgentName, s.Status)
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
