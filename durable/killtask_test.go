package durable

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/event"
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
	file := filepath.Join(t.TempDir(), "killed.json")
	cfg := workerConfig{Address: addr, DB: db, BaseURL: api.URL + "/v1", Key: "key-0", Members: members, Window: window}
	first := cfg
	first.ContinueAfter, first.KillAt, first.KillFile = 1<<30, 100, file
	killed := startWorker(t, first)
	p, err := teamPool(api.URL+"/v1", "key-client", st, members)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialTest(t, addr)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	starts, ends := map[string]int{}, map[string]int{}
	sink := event.SinkFunc(func(e event.Event) {
		switch x := e.(type) {
		case event.SpawnSessionStart:
			starts[x.ChildSessionID]++
		case event.SpawnSessionEnd:
			ends[x.ChildSessionID]++
		}
	})
	node, _ := p.Node("crew")
	type result struct {
		root string
		out  SessionOutput
		err  error
	}
	done := make(chan result, 1)
	go func() {
		root, out, err := RunRoot(ctx, c, st, RootRequest{Node: node, Prompt: "Answer.", TaskQueue: testQueue}, sink)
		done <- result{root, out, err}
	}()
	select {
	case <-killed.waited:
	case r := <-done:
		t.Fatalf("the team ended before the kill: %+v, %v", r.out, r.err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the worker died without a kill in a creating task: %v", err)
	}
	var lost killedTask
	if err := json.Unmarshal(raw, &lost); err != nil || len(lost.Sessions) == 0 {
		t.Fatalf("%s: %v", raw, err)
	}
	second := cfg
	second.Key, second.ContinueAfter = "key-1", lost.History
	startWorker(t, second)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.out.StopReason != event.StopCompleted {
		t.Fatalf("team ended %s: %s", r.out.StopReason, r.out.Error)
	}
	runs, err := runsOf(ctx, c, r.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed in a task of %d history events that created %v; the team's workflow ran %d times", lost.History, lost.Sessions, len(runs))
	if len(runs) < 2 {
		t.Errorf("the team's workflow ran once: the task done again did not drain (runs %v)", runs)
	}
	kids, err := st.ListSessions(ctx, session.ListOptions{ParentID: r.root})
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != members {
		t.Errorf("%d sessions under the team, want %d (one a member)", len(kids), members)
	}
	for _, k := range kids {
		if k.Status != session.StatusCompleted || starts[k.ID] != 1 || ends[k.ID] != 1 {
			t.Errorf("member %s (%s): %s, started %d times, ended %d times", k.ID, k.AgentName, k.Status, starts[k.ID], ends[k.ID])
		}
	}
	for _, id := range lost.Sessions {
		if ends[id] != 1 {
			t.Errorf("session %s, created by the lost task, ended %d times", id, ends[id])
		}
	}
}
