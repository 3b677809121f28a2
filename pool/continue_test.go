package pool_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
	"github.com/agentpool/agentpool/tool"
)

// continueManifest: lead → mid → writer; the writer ticks (a tool that
// counts its runs), then calls Write, which asks for approval.
const continueManifest = `
default_agent: lead
agents:
  lead:
    tools: [subagent]
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: mid, prompt: Have it written.}}]}, "lead done"]}
  mid:
    tools: [subagent]
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: writer, prompt: Write it.}}]}, "mid done"]}
  writer:
    tools: [file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: tick, args: {}}]
        - tool_calls: [{name: Write, args: {file_path: notes.md, content: "approved\n"}}]
        - "writer done"
`

// frozenStore stands for a process that died: once frozen, its writes
// change nothing (they are accepted and dropped), while what it wrote
// before stays, and is made durable by Flush and Close.
type frozenStore struct {
	session.Store
	frozen atomic.Bool
}

func (f *frozenStore) freeze()               { f.frozen.Store(true) }
func (f *frozenStore) Unwrap() session.Store { return f.Store }

func (f *frozenStore) CreateSession(ctx context.Context, s session.Session) error {
	if f.frozen.Load() {
		return nil
	}
	return f.Store.CreateSession(ctx, s)
}

func (f *frozenStore) UpdateSession(ctx context.Context, id string, fn func(*session.Session)) error {
	if f.frozen.Load() {
		return nil
	}
	return f.Store.UpdateSession(ctx, id, fn)
}

func (f *frozenStore) AppendMessages(ctx context.Context, id string, msgs ...session.Message) error {
	if f.frozen.Load() {
		return nil
	}
	return f.Store.AppendMessages(ctx, id, msgs...)
}

func (f *frozenStore) AppendEvents(ctx context.Context, id string, evs ...event.Event) error {
	if f.frozen.Load() {
		return nil
	}
	return f.Store.AppendEvents(ctx, id, evs...)
}

func (f *frozenStore) Release(ctx context.Context, id string) error {
	if f.frozen.Load() {
		return nil
	}
	return f.Store.Release(ctx, id)
}

// ticks counts the runs of the tick tool.
type ticks struct{ n atomic.Int64 }

func (c *ticks) tool() tool.Tool {
	return tool.New("tick", "Counts.", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		c.n.Add(1)
		return tool.Result{Content: "tick"}, nil
	})
}

// continued is a pool over a database whose run died while the writer's
// Write waited for approval.
type continued struct {
	path, ws, root, request string
	ticks                   *ticks
}

// dieWaiting runs the continue manifest over a new SQLite database until
// the writer's Write asks, then stops its process there (frozenStore):
// nothing it does after is stored, and its store is closed as a dead
// process's is (its claims and instance gone, its sessions running).
func dieWaiting(t *testing.T) continued {
	t.Helper()
	c := continued{path: filepath.Join(t.TempDir(), "db.sqlite"), ws: t.TempDir(), ticks: &ticks{}}
	st, err := sqlite.Open(c.path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fz := &frozenStore{Store: st}
	p, broker := continuePool(t, fz, c, approval.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	detach := broker.Attach("test", func(n approval.Notice) {
		if n.Kind == approval.Asked {
			fz.freeze()
			c.request = n.Request.ID
			cancel()
		}
	})
	defer detach()
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, nil)
	if err != nil || c.request == "" {
		t.Fatalf("the first run: %+v %v; asked %q", res, err, c.request)
	}
	c.root = res.SessionID
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if c.ticks.n.Load() != 1 {
		t.Fatalf("tick ran %d times before the Write", c.ticks.n.Load())
	}
	return c
}

// continuePool is a pool on the continue manifest over st, with an
// approval broker of opts.
func continuePool(t *testing.T, st session.Store, c continued, opts approval.Options) (*pool.Pool, *approval.Broker) {
	t.Helper()
	m, err := config.Parse("agentpool.yaml", []byte(continueManifest))
	if err != nil {
		t.Fatal(err)
	}
	reg := hook.New(hook.Options{})
	p, err := pool.New(m, pool.Options{Store: st, Hooks: reg, Workspace: c.ws, ExtraTools: []tool.Tool{c.ticks.tool()}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := approval.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	reg.UseBroker(b)
	return p, b
}

// reopen opens the database again, as a new process does, and makes a
// pool on it; the test closes it.
func reopen(t *testing.T, c continued, opts approval.Options) (*pool.Pool, *approval.Broker, *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(c.path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, b := continuePool(t, st, c, opts)
	t.Cleanup(func() { p.Close() })
	return p, b, st
}

// answer attaches a front end that answers every request it is shown.
func answer(b *approval.Broker, reply approval.Reply, message string) (asked <-chan approval.Request, detach func()) {
	ch := make(chan approval.Request, 8)
	return ch, b.Attach("test", func(n approval.Notice) {
		if n.Kind == approval.Asked {
			ch <- n.Request
			_ = b.Reply(n.Request.ID, reply, message, "test")
		}
	})
}

// sessionsByAgent is the tree of root, by agent name.
func sessionsByAgent(t *testing.T, st session.Store, root string) map[string]session.Session {
	t.Helper()
	all, err := session.Subtree(context.Background(), st, root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]session.Session{}
	for _, s := range all {
		out[s.AgentName] = s
	}
	return out
}

// writerCall is the writer's Write result in its log, and how many
// approval_requested and approval_replied events the log has.
func writerCall(t *testing.T, st session.Store, writer string) (res event.ToolCallComplete, requested, replied int) {
	t.Helper()
	recs, err := st.Events(context.Background(), writer, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if c, ok := r.Event.(event.ToolCallComplete); ok && c.ToolName == "Write" {
			res = c
		}
		if _, ok, _ := approval.ParseRequested(r.Event); ok {
			requested++
		}
		if _, ok, _ := approval.ParseReplied(r.Event); ok {
			replied++
		}
	}
	return res, requested, replied
}

// A run that died while a grandchild's Write waited is left running by
// the store's recovery and listed by Waiting; Continue shows the stored
// request again with its id, and once it is allowed the Write runs (the
// tick before it does not run again), every session completes and the
// root answers. The sink gets the stored run, then its continuation: one
// stream that keeps the invariants.
func TestContinueAllowed(t *testing.T) {
	c := dieWaiting(t)
	p, b, st := reopen(t, c, approval.Options{})
	if rec := st.Recovered(); len(rec) != 0 {
		t.Errorf("the recovery closed %v; the waiting tree should stay running", rec)
	}
	for name, s := range sessionsByAgent(t, st, c.root) {
		if s.Status != session.StatusRunning {
			t.Errorf("%s is %s after the recovery, want running", name, s.Status)
		}
	}
	ctx := context.Background()
	if ids, err := p.Waiting(ctx); err != nil || len(ids) != 1 || ids[0] != c.root {
		t.Fatalf("Waiting: %v %v, want [%s]", ids, err, c.root)
	}
	asked, detach := answer(b, approval.AllowOnce, "")
	defer detach()
	sink, events := eventtest.Collect()
	res, err := p.Continue(ctx, c.root, sink)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-asked; got.ID != c.request || got.Tool != "Write" || got.Agent != "writer" {
		t.Errorf("shown again: %+v, want request %s of the writer's Write", got, c.request)
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "lead done" {
		t.Fatalf("the continued run: %+v", res.Result)
	}
	if b, err := os.ReadFile(filepath.Join(c.ws, "notes.md")); err != nil || string(b) != "approved\n" {
		t.Errorf("notes.md: %q %v", b, err)
	}
	if n := c.ticks.n.Load(); n != 1 {
		t.Errorf("tick ran %d times in all; what completed must not run again", n)
	}
	tree := sessionsByAgent(t, st, c.root)
	for name, s := range tree {
		if s.Status != session.StatusCompleted {
			t.Errorf("%s is %s, want completed", name, s.Status)
		}
	}
	write, requested, replied := writerCall(t, st, tree["writer"].ID)
	if write.IsError || !strings.Contains(write.ToolResult, "notes.md") || requested != 1 || replied != 1 {
		t.Errorf("the writer's log: Write %+v, %d requested, %d replied (want one of each)", write, requested, replied)
	}
	if err := eventtest.CheckInvariants(c.root, events()); err != nil {
		t.Errorf("the continued stream: %v", err)
	}
	rep, err := session.ReplayTree(ctx, st, c.root)
	if err != nil {
		t.Fatal(err)
	}
	stored := make([]event.Event, len(rep))
	for i, r := range rep {
		stored[i] = r.Event
	}
	if err := eventtest.CheckInvariants(c.root, stored); err != nil {
		t.Errorf("the stored tree: %v", err)
	}
	if ids, err := p.Waiting(ctx); err != nil || len(ids) != 0 {
		t.Errorf("Waiting after the run: %v %v", ids, err)
	}
	if _, err := p.Continue(ctx, c.root, nil); !errors.Is(err, pool.ErrNotWaiting) {
		t.Errorf("Continue again: %v, want ErrNotWaiting", err)
	}
}

// Rejected, timed out or cancelled, a continued request ends the call as
// in a live run: the writer's model reads the rejection and the run
// completes, or, cancelled, the run is aborted.
func TestContinueSettledOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   approval.Options
		answer approval.Reply // "": nobody answers
		cancel bool
		result string
		stop   event.StopReason
	}{
		{"rejected", approval.Options{}, approval.RejectOnce, false, "tool Write denied: approval rejected: rejected by the user in test: no", event.StopCompleted},
		{"timeout", approval.Options{Timeout: time.Millisecond}, "", false, "tool Write denied: approval rejected: nobody answered within 1ms", event.StopCompleted},
		{"cancelled", approval.Options{}, "", true, "", event.StopAborted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dieWaiting(t)
			p, b, st := reopen(t, c, tc.opts)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var detach func()
			if tc.answer != "" {
				_, detach = answer(b, tc.answer, "no")
			} else {
				detach = b.Attach("test", func(n approval.Notice) {
					if n.Kind == approval.Asked && tc.cancel {
						cancel()
					}
				})
			}
			defer detach()
			res, err := p.Continue(ctx, c.root, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Result.StopReason != tc.stop {
				t.Fatalf("the continued run: %+v, want %s", res.Result, tc.stop)
			}
			if _, err := os.Stat(filepath.Join(c.ws, "notes.md")); !os.IsNotExist(err) {
				t.Errorf("notes.md: %v, want none", err)
			}
			tree := sessionsByAgent(t, st, c.root)
			write, _, replied := writerCall(t, st, tree["writer"].ID)
			if tc.result != "" && (write.ToolResult != tc.result || !write.IsError) {
				t.Errorf("the Write's result: %q, want %q", write.ToolResult, tc.result)
			}
			if replied != 1 {
				t.Errorf("%d approval_replied in the writer's log, want 1", replied)
			}
			want := session.StatusFromStop(tc.stop)
			for name, s := range tree {
				if s.Status != want {
					t.Errorf("%s is %s, want %s", name, s.Status, want)
				}
			}
		})
	}
}

// Two processes over one store go on with a waiting run: the first to
// claim it does, the other is refused (or finds nothing waiting any
// more); the Write runs once.
func TestContinueTwoProcesses(t *testing.T) {
	c := dieWaiting(t)
	p1, b1, _ := reopen(t, c, approval.Options{})
	p2, b2, _ := reopen(t, c, approval.Options{})
	_, d1 := answer(b1, approval.AllowOnce, "")
	defer d1()
	_, d2 := answer(b2, approval.AllowOnce, "")
	defer d2()
	var (
		wg   sync.WaitGroup
		errs [2]error
		ress [2]pool.RunResult
	)
	for i, p := range []*pool.Pool{p1, p2} {
		wg.Go(func() { ress[i], errs[i] = p.Continue(context.Background(), c.root, nil) })
	}
	wg.Wait()
	ran := 0
	for i, err := range errs {
		switch {
		case err == nil && ress[i].Result.StopReason == event.StopCompleted:
			ran++
		case errors.Is(err, session.ErrRunning), errors.Is(err, pool.ErrNotWaiting):
		default:
			t.Errorf("process %d: %+v %v", i+1, ress[i].Result, err)
		}
	}
	if ran != 1 {
		t.Errorf("%d processes went on with the run, want 1 (%v)", ran, errs)
	}
	if b, err := os.ReadFile(filepath.Join(c.ws, "notes.md")); err != nil || string(b) != "approved\n" {
		t.Errorf("notes.md: %q %v", b, err)
	}
}

// A tree whose waiting session cannot go on (its agent is no longer in
// the manifest) is closed as interrupted, as the recovery would have, and
// the error says why.
func TestContinueImpossible(t *testing.T) {
	c := dieWaiting(t)
	st, err := sqlite.Open(c.path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := config.Parse("agentpool.yaml", []byte(strings.Replace(continueManifest, "  writer:", "  scribe:", 1)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Store: st, Workspace: c.ws})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = p.Continue(context.Background(), c.root, nil)
	if err == nil || !strings.Contains(err.Error(), `runs "writer"`) {
		t.Fatalf("Continue: %v, want it to name the agent it cannot run", err)
	}
	for name, s := range sessionsByAgent(t, st, c.root) {
		if s.Status != session.StatusInterrupted {
			t.Errorf("%s is %s, want interrupted", name, s.Status)
		}
	}
	if w, err := session.FindWaiting(context.Background(), st, c.root); err != nil || w != nil {
		t.Errorf("FindWaiting after: %+v %v", w, err)
	}
}

// The usage of the turns before the restart counts: the continued
// tree's sessions end with the own and total usage and cost of the same
// run allowed without a restart (the scripted models' usage depends only
// on the requests, which are the same: the workspaces' paths have the
// same length).
func TestContinueCountsEarlierTurns(t *testing.T) {
	c := dieWaiting(t)
	p, b, st := reopen(t, c, approval.Options{})
	_, detach := answer(b, approval.AllowOnce, "")
	defer detach()
	ctx := context.Background()
	if res, err := p.Continue(ctx, c.root, nil); err != nil || res.Result.StopReason != event.StopCompleted {
		t.Fatalf("the continued run: %+v %v", res, err)
	}

	ref := continued{path: filepath.Join(t.TempDir(), "db.sqlite"), ws: t.TempDir(), ticks: &ticks{}}
	if len(ref.ws) != len(c.ws) {
		t.Fatalf("workspaces %s and %s: their paths' lengths differ", ref.ws, c.ws)
	}
	rp, rb, rst := reopen(t, ref, approval.Options{})
	_, rdetach := answer(rb, approval.AllowOnce, "")
	defer rdetach()
	res, err := rp.RunSink(ctx, pool.RunRequest{Prompt: "go"}, nil)
	if err != nil || res.Result.StopReason != event.StopCompleted {
		t.Fatalf("the run without a restart: %+v %v", res, err)
	}

	got, want := sessionsByAgent(t, st, c.root), sessionsByAgent(t, rst, res.SessionID)
	for _, name := range []string{"lead", "mid", "writer"} {
		g, w := got[name], want[name]
		if w.Usage.IsZero() {
			t.Fatalf("%s spent nothing in the run without a restart", name)
		}
		if g.Usage != w.Usage || g.TotalUsage != w.TotalUsage || g.Cost != w.Cost || g.TotalCost != w.TotalCost {
			t.Errorf("%s after the restart: usage %+v total %+v cost %v/%v; without a restart: %+v total %+v cost %v/%v",
				name, g.Usage, g.TotalUsage, g.Cost, g.TotalCost, w.Usage, w.TotalUsage, w.Cost, w.TotalCost)
		}
		if _, ok := g.Metadata[session.MetaRunSpent]; ok {
			t.Errorf("%s keeps %s after its run ended", name, session.MetaRunSpent)
		}
	}
}
