package spawn_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.yaml.in/yaml/v3"
	"pgregory.net/rapid"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// The property test: random delegation trees (task sync and async, workers,
// parallel and sequential teams, failures, depth-limit refusals, root
// cancellations) run through the pool must keep every stream invariant.

const (
	propMaxDepth = 5 // limits.max_depth of the generated manifests
	propGenDepth = 6 // nodes are generated one level deeper, to hit the limit
	propBudget   = 40
	treesPerRun  = 2 // trees per rapid check: 100 checks give 200 trees
)

// gnode is one node of a generated tree; every node is its own manifest
// entry, so its script can follow the tree.
type gnode struct {
	name       string
	kind       string     // agent, parallel, sequential
	turns      [][]gdeleg // agent: the tool calls of each turn
	errAt      int        // agent: index of the turn that is a model error, -1 for none
	members    []*gnode   // team
	requireAll bool       // sequential team
}

// gdeleg is one delegation of an agent.
type gdeleg struct {
	how   string // task, async, worker
	child *gnode
	pass  bool // worker: pass_message_history
	keep  bool // worker: reset_history_on_run false
}

type treeGen struct {
	t      *rapid.T
	n      int
	budget int
}

func (g *treeGen) node(depth int) *gnode {
	n := &gnode{name: fmt.Sprintf("n%d", g.n), kind: "agent", errAt: -1}
	g.n++
	canGrow := depth < propGenDepth && g.budget > 0
	if canGrow && depth > 0 {
		switch rapid.IntRange(0, 5).Draw(g.t, "kind") {
		case 0:
			n.kind = "parallel"
		case 1:
			n.kind = "sequential"
		}
	} else if canGrow && rapid.IntRange(0, 5).Draw(g.t, "rootkind") == 0 {
		n.kind = "parallel"
	}
	switch n.kind {
	case "agent":
		turns := 0
		if canGrow {
			turns = rapid.IntRange(0, 3).Draw(g.t, "turns")
			if depth < 3 && turns == 0 {
				turns = rapid.IntRange(0, 2).Draw(g.t, "moreTurns")
			}
		}
		for range turns {
			var calls []gdeleg
			for range rapid.IntRange(1, 2).Draw(g.t, "calls") {
				if g.budget <= 0 {
					break
				}
				g.budget--
				d := gdeleg{how: rapid.SampledFrom([]string{"task", "async", "worker"}).Draw(g.t, "how")}
				if d.how == "worker" {
					d.pass = rapid.Bool().Draw(g.t, "pass")
					d.keep = rapid.Bool().Draw(g.t, "keep")
				}
				d.child = g.node(depth + 1)
				calls = append(calls, d)
			}
			if len(calls) > 0 {
				n.turns = append(n.turns, calls)
			}
		}
		if rapid.IntRange(0, 6).Draw(g.t, "fails") == 0 {
			n.errAt = rapid.IntRange(0, len(n.turns)).Draw(g.t, "errAt")
		}
	default:
		if n.kind == "sequential" {
			n.requireAll = rapid.Bool().Draw(g.t, "requireAll")
		}
		for range rapid.IntRange(1, 3).Draw(g.t, "members") {
			if g.budget <= 0 && len(n.members) > 0 {
				break
			}
			g.budget--
			n.members = append(n.members, g.node(depth+1))
		}
	}
	return n
}

// manifest renders the tree as agentpool YAML.
func (n *gnode) manifest() []byte {
	agents := map[string]any{}
	teams := map[string]any{}
	var walk func(*gnode)
	walk = func(n *gnode) {
		switch n.kind {
		case "agent":
			var turns []any
			var workers []any
			for i, calls := range n.turns {
				if i == n.errAt {
					break
				}
				var tc []any
				for _, d := range calls {
					switch d.how {
					case "worker":
						tc = append(tc, map[string]any{"name": "ask_" + d.child.name, "args": map[string]any{"prompt": "help " + n.name}})
						workers = append(workers, map[string]any{"name": d.child.name, "pass_message_history": d.pass, "reset_history_on_run": !d.keep})
					default:
						tc = append(tc, map[string]any{"name": "task", "args": map[string]any{
							"agent_or_team": d.child.name, "prompt": "work for " + n.name, "async_mode": d.how == "async",
						}})
					}
				}
				turns = append(turns, map[string]any{"tool_calls": tc})
			}
			if n.errAt >= 0 {
				turns = append(turns, map[string]any{"text": "trying", "error": "boom in " + n.name})
			} else {
				turns = append(turns, "done "+n.name)
			}
			a := map[string]any{"model": map[string]any{"type": "scripted", "turns": turns}, "tools": []any{"subagent"}}
			if len(workers) > 0 {
				a["workers"] = workers
			}
			agents[n.name] = a
			for _, calls := range n.turns {
				for _, d := range calls {
					walk(d.child)
				}
			}
		default:
			var members []string
			for _, m := range n.members {
				members = append(members, m.name)
				walk(m)
			}
			t := map[string]any{"mode": n.kind, "members": members}
			if n.kind == "sequential" {
				t["require_all"] = n.requireAll
			}
			teams[n.name] = t
		}
	}
	walk(n)
	doc := map[string]any{"agents": agents, "limits": map[string]any{"max_depth": propMaxDepth}}
	if len(teams) > 0 {
		doc["teams"] = teams
	}
	if _, ok := agents["n0"]; !ok {
		// A manifest needs an agent; this one is never run.
		agents["spare"] = map[string]any{"model": "test"}
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

// expect computes, for a run that is not cancelled, how many sessions the
// node spawns below itself and whether it fails; stops maps each node that
// gets a session to its expected stop reason.
func (n *gnode) expect(depth int, stops map[string]event.StopReason) (sessions int, failed bool) {
	spawn := func(c *gnode) (bool, int) { // created, sessions below
		if depth+1 > propMaxDepth {
			return false, 0
		}
		k, f := c.expect(depth+1, stops)
		stops[c.name] = event.StopCompleted
		if f {
			stops[c.name] = event.StopError
		}
		return !f, k + 1
	}
	switch n.kind {
	case "agent":
		for i, calls := range n.turns {
			if i == n.errAt {
				break
			}
			for _, d := range calls {
				_, k := spawn(d.child)
				sessions += k
			}
		}
		return sessions, n.errAt >= 0
	case "parallel":
		ok := 0
		for _, m := range n.members {
			fine, k := spawn(m)
			sessions += k
			if fine {
				ok++
			}
		}
		return sessions, ok == 0
	default:
		failures := 0
		for _, m := range n.members {
			fine, k := spawn(m)
			sessions += k
			if !fine {
				failures++
				if n.requireAll {
					return sessions, true
				}
			}
		}
		return sessions, failures == len(n.members)
	}
}

var propSessions, propDeepest atomic.Int64

func TestPropertyDelegationTrees(t *testing.T) {
	if testing.Short() {
		t.Skip("property test")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var trees, cancelled, failedRoots atomic.Int64
	propSessions.Store(0)
	propDeepest.Store(0)
	rapid.Check(t, func(rt *rapid.T) {
		for range treesPerRun {
			g := &treeGen{t: rt, budget: 8 + rapid.IntRange(0, propBudget).Draw(rt, "budget")}
			root := g.node(0)
			cancelAt := -1
			if rapid.IntRange(0, 2).Draw(rt, "cancel") == 0 {
				cancelAt = rapid.IntRange(1, 120).Draw(rt, "cancelAt")
			}
			c, f := runTree(rt, root, cancelAt)
			trees.Add(1)
			if c {
				cancelled.Add(1)
			}
			if f {
				failedRoots.Add(1)
			}
		}
	})
	t.Logf("%d trees, %d cancelled mid-run, %d failed roots, %d sessions, deepest %d",
		trees.Load(), cancelled.Load(), failedRoots.Load(), propSessions.Load(), propDeepest.Load())
	if trees.Load() < 200 && !t.Failed() {
		// Fewer only when -rapid.checks asks for fewer.
		t.Logf("note: only %d trees ran", trees.Load())
	}
}

// runTree runs one generated tree and checks it. It reports whether the
// cancellation hit the run and whether the root failed.
func runTree(t *rapid.T, root *gnode, cancelAt int) (hit, rootFailed bool) {
	yml := root.manifest()
	m, err := config.Parse("tree.yaml", yml)
	if err != nil {
		t.Fatalf("manifest: %v\n%s", err, yml)
	}
	p, err := pool.New(m, pool.Options{})
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		evs      []event.Event
		cancelIx = -1
	)
	sink := event.SinkFunc(func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		evs = append(evs, e)
		if len(evs) == cancelAt {
			cancelIx = len(evs) - 1
			cancel()
		}
	})
	done := make(chan struct{})
	var res pool.RunResult
	go func() {
		defer close(done)
		res, err = p.RunSink(ctx, pool.RunRequest{Node: root.name, Prompt: "start"}, sink)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("run did not end\n%s", yml)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	mu.Lock()
	stream := evs
	mu.Unlock()
	fail := func(format string, args ...any) {
		t.Fatalf(format+"\nmanifest:\n%s\ncancel at %d, stream of %d events", append(args, yml, cancelIx, len(stream))...)
	}
	if err := eventtest.CheckInvariants(res.SessionID, stream); err != nil {
		fail("%v", err)
	}

	// Starts, ends and terminal events per child session.
	type child struct {
		name     string
		startIx  int
		end      *event.SpawnSessionEnd
		endIx    int
		terminal event.Event
	}
	kids := map[string]*child{}
	var order []string
	for i, e := range stream {
		sid, inner := event.Unwrap(res.SessionID, e)
		switch v := inner.(type) {
		case event.SpawnSessionStart:
			kids[v.ChildSessionID] = &child{name: v.SourceName, startIx: i}
			order = append(order, v.ChildSessionID)
		case event.SpawnSessionEnd:
			if k := kids[v.ChildSessionID]; k != nil {
				if k.end != nil {
					fail("second end for %s", v.ChildSessionID)
				}
				k.end, k.endIx = &v, i
			}
		case event.StreamComplete, event.RunError:
			if k := kids[sid]; k != nil {
				k.terminal = inner
			}
		}
	}
	for _, sid := range order {
		k := kids[sid]
		if k.end == nil {
			fail("no end for %s (%s)", sid, k.name)
		}
		stop := k.end.StopReason
		if cancelIx >= 0 && k.startIx > cancelIx && stop != event.StopAborted {
			fail("%s started after the cancellation but ended %s", k.name, stop)
		}
		switch stop {
		case event.StopCompleted:
			if _, ok := k.terminal.(event.StreamComplete); !ok {
				fail("%s ended completed without stream_complete", k.name)
			}
		case event.StopError:
			if re, ok := k.terminal.(event.RunError); !ok || re.Code == "aborted" {
				fail("%s ended error, its last word was %#v", k.name, k.terminal)
			}
		case event.StopAborted:
			if cancelIx < 0 {
				fail("%s aborted without a cancellation", k.name)
			}
			// An open child ends aborted, whatever it was doing: even one
			// that had failed and was waiting for its async children.
			if k.endIx < cancelIx {
				fail("%s ended aborted before the cancellation", k.name)
			}
		default:
			fail("%s ended %s", k.name, stop)
		}
	}
	if k := kidsAfterEnd(stream, res.SessionID); k != "" {
		fail("%s", k)
	}

	// The store: every session settled; when not cancelled, exactly the
	// expected sessions with the expected outcomes.
	all, err := p.Store().ListSessions(context.Background(), session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	propSessions.Add(int64(len(all)))
	for _, s := range all {
		for d := propDeepest.Load(); int64(s.Depth) > d && !propDeepest.CompareAndSwap(d, int64(s.Depth)); d = propDeepest.Load() {
		}
		if s.Status == session.StatusRunning {
			fail("session %s (%s) still running", s.ID, s.AgentName)
		}
		if p.Runtime().Running(s.ID) {
			fail("session %s (%s) still registered", s.ID, s.AgentName)
		}
	}
	hit = cancelIx >= 0
	if !hit {
		stops := map[string]event.StopReason{}
		want, failed := root.expect(0, stops)
		if len(all) != want+1 {
			fail("%d sessions, want %d", len(all), want+1)
		}
		wantStop := event.StopCompleted
		if failed {
			wantStop = event.StopError
		}
		if res.Result.StopReason != wantStop {
			fail("root ended %s (%v), want %s", res.Result.StopReason, res.Result.Err, wantStop)
		}
		for _, sid := range order {
			k := kids[sid]
			if k.end.StopReason != stops[k.name] {
				fail("%s ended %s, want %s", k.name, k.end.StopReason, stops[k.name])
			}
		}
		rootFailed = failed
	}
	return hit, rootFailed
}

// kidsAfterEnd reports a root-session event after the root's terminal
// event (the checker allows the root no events after it either; this
// names the first one for a clearer message).
func kidsAfterEnd(stream []event.Event, root string) string {
	term := -1
	for i, e := range stream {
		sid, inner := event.Unwrap(root, e)
		if sid != root {
			if term >= 0 {
				return fmt.Sprintf("event %d of %s after the root's terminal event", i, sid)
			}
			continue
		}
		switch inner.(type) {
		case event.StreamComplete, event.RunError:
			term = i
		}
	}
	return ""
}
