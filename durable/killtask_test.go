package durable

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// killInTask is a worker interceptor that kills its worker (SIGKILL) in
// the first workflow task of at history events or more whose Create
// local activity stores child sessions, once the activity has stored
// them: the task is lost, its creations are in the store, and another
// worker does the task again. Before dying it writes the task's history
// length and the sessions it created to file (a killedTask).
type killInTask struct {
	interceptor.WorkerInterceptorBase
	at   int
	file string
}

// killedTask is what killInTask writes before the kill.
type killedTask struct {
	History  int      `json:"history"`
	Sessions []string `json:"sessions"`
}

func (k *killInTask) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &killInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, k: k}
}

type killInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	k *killInTask
}

func (i *killInbound) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&killOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, k: i.k})
}

type killOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	k *killInTask
}

func (o *killOutbound) ExecuteLocalActivity(ctx workflow.Context, typ string, args ...any) workflow.Future {
	f := o.Next.ExecuteLocalActivity(ctx, typ, args...)
	n := workflow.GetInfo(ctx).GetCurrentHistoryLength()
	if typ != actCreate || len(args) != 1 || workflow.IsReplaying(ctx) || n < o.k.at {
		return f
	}
	in, ok := args[0].(CreateInput)
	if !ok {
		return f
	}
	if err := f.Get(ctx, nil); err != nil {
		return f // not stored: no kill
	}
	killed := killedTask{History: n}
	for _, s := range append([]session.Session{in.Session}, in.More...) {
		killed.Sessions = append(killed.Sessions, s.ID)
	}
	raw, _ := json.Marshal(killed)
	if err := os.WriteFile(o.k.file, raw, 0o600); err != nil {
		panic(err)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the kill is on its way
}

// A worker killed in the very workflow task after which the run drains
// (the task done again has a longer history, past the bounds): the
// members the lost task created, stored and started in the team's log,
// start in the next run of the team's workflow under the same session
// ids, which run and end. Forced: the first worker, whose workflows never
// continue as new, dies in the first task of 100 history events or more
// that creates members; the second continues as new past the history
// that task had, so the task done again drains before it creates them.
// The team's members are its own sessions, each started and ended once.
func TestKillWorkerInTheTaskThatDrains(t *testing.T) {
	t.Parallel()
	const members, window = 30, 5
	addr := startDevServer(t)
	api := newFakeAPI(t, 5*time.Millisecond)
	db := testDB(t)
	st := openTestDB(t, db)
	cfg := workerConfig{Address: addr, DB: db, BaseURL: api.URL + "/v1", Key: "key-0", Members: members, Window: window}
	p, err := teamPool(api.URL+"/v1", "key-client", st, members)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	first := cfg
	first.ContinueAfter, first.KillAt = 1<<30, 100
	k := runKilledInTask(t, p, "crew", first, func(lost killedTask) workerConfig {
		second := cfg
		second.Key, second.ContinueAfter = "key-1", lost.History
		return second
	})
	runs, err := runsOf(k.ctx, k.c, k.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed in a task of %d history events that created %v; the team's workflow ran %d times", k.lost.History, k.lost.Sessions, len(runs))
	if len(runs) < 2 {
		t.Errorf("the team's workflow ran once: the task done again did not drain (runs %v)", runs)
	}
	k.checkChildren(t, st, members)
}

// A worker killed in the workflow task whose Create stored an agent's
// child (the boss's delegation to its worker): the task done again on the
// other worker starts that very session, which runs and ends; the boss
// has one child, not a second beside one left running.
func TestKillWorkerInTheTaskThatCreatesAChild(t *testing.T) {
	t.Parallel()
	addr := startDevServer(t)
	api := newFakeAPI(t, 5*time.Millisecond)
	db := testDB(t)
	st := openTestDB(t, db)
	cfg := workerConfig{Address: addr, DB: db, BaseURL: api.URL + "/v1", Key: "key-0"}
	p, err := e2ePool(api.URL+"/v1", "key-client", st)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	first := cfg
	first.KillAt = 1
	k := runKilledInTask(t, p, "boss", first, func(killedTask) workerConfig {
		second := cfg
		second.Key = "key-1"
		return second
	})
	k.checkChildren(t, st, 1)
}

// killedRun is a run whose first worker killInTask killed.
type killedRun struct {
	ctx          context.Context
	c            client.Client
	root         string
	lost         killedTask
	starts, ends map[string]int // spawn_session_start and _end by child session
}

// runKilledInTask runs node of p on a worker of config first, which
// kills itself in a creating task (first.KillAt), then on one of the
// config second makes of what the killed task created, and checks that
// the run completed.
func runKilledInTask(t *testing.T, p *pool.Pool, node string, first workerConfig, second func(killedTask) workerConfig) *killedRun {
	t.Helper()
	first.KillFile = filepath.Join(t.TempDir(), "killed.json")
	killed := startWorker(t, first)
	k := &killedRun{c: dialTest(t, first.Address), starts: map[string]int{}, ends: map[string]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	k.ctx = ctx
	sink := event.SinkFunc(func(e event.Event) {
		switch x := e.(type) {
		case event.SpawnSessionStart:
			k.starts[x.ChildSessionID]++
		case event.SpawnSessionEnd:
			k.ends[x.ChildSessionID]++
		}
	})
	n, _ := p.Node(node)
	done := runRootAsync(ctx, k.c, p.Store(), RootRequest{Node: n, Prompt: "Answer.", TaskQueue: testQueue}, sink)
	select {
	case <-killed.waited:
	case r := <-done:
		t.Fatalf("the run ended before the kill: %+v, %v", r.out, r.err)
	}
	raw, err := os.ReadFile(first.KillFile)
	if err != nil {
		t.Fatalf("the worker died without a kill in a creating task: %v", err)
	}
	if err := json.Unmarshal(raw, &k.lost); err != nil || len(k.lost.Sessions) == 0 {
		t.Fatalf("%s: %v", raw, err)
	}
	startWorker(t, second(k.lost))
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.out.StopReason != event.StopCompleted {
		t.Fatalf("the run ended %s: %s", r.out.StopReason, r.out.Error)
	}
	k.root = r.root
	return k
}

// checkChildren checks that the root has n child sessions, each
// completed, started and ended once in its log, among them every session
// the lost task created.
func (k *killedRun) checkChildren(t *testing.T, st session.Store, n int) {
	t.Helper()
	kids, err := st.ListSessions(k.ctx, session.ListOptions{ParentID: k.root})
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != n {
		t.Errorf("%d sessions under the root, want %d", len(kids), n)
	}
	for _, c := range kids {
		if c.Status != session.StatusCompleted || k.starts[c.ID] != 1 || k.ends[c.ID] != 1 {
			t.Errorf("child %s (%s): %s, started %d times, ended %d times", c.ID, c.AgentName, c.Status, k.starts[c.ID], k.ends[c.ID])
		}
	}
	for _, id := range k.lost.Sessions {
		if k.ends[id] != 1 {
			t.Errorf("session %s, created by the lost task, ended %d times", id, k.ends[id])
		}
	}
}
