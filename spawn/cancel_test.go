package spawn_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/team"
)

// started is a session whose model was asked: its node and its id.
type started struct{ name, session string }

// gatedModel signals on ready with its session, then answers text once
// release is closed; it ends aborted when its context ends first.
func gatedModel(ready chan<- started, name string, release <-chan struct{}, text string) *fnModel {
	return newFnModel(func(ctx context.Context, _ int, _ *model.Request) reply {
		ready <- started{name, spawn.InvocationFrom(ctx).Session.ID}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return reply{text: text}
	})
}

// blockedModel signals on ready with its session and blocks until its
// context ends.
func blockedModel(ready chan<- started, name string) *fnModel {
	return newFnModel(func(ctx context.Context, _ int, _ *model.Request) reply {
		ready <- started{name, spawn.InvocationFrom(ctx).Session.ID}
		<-ctx.Done()
		return reply{}
	})
}

// delegating asks for calls at its first turn and then answers with the
// results it was given, so that the test reads what it saw.
func delegating(calls ...call) *fnModel {
	return newFnModel(func(_ context.Context, turn int, req *model.Request) reply {
		if turn == 0 {
			return reply{calls: calls}
		}
		var b strings.Builder
		for _, m := range req.Messages {
			for _, p := range m.Parts {
				if p.Kind == model.PartToolResult {
					b.WriteString(p.Text)
					b.WriteString("\n")
				}
			}
			if m.Synthetic {
				b.WriteString(m.Text())
				b.WriteString("\n")
			}
		}
		return reply{text: "saw: " + b.String()}
	})
}

// running is a root run started with RunRoot in a goroutine.
type running struct {
	root string
	done chan runOut
}

// start runs a node as the pool runs a root (Runtime.RunRoot).
func (h *harness) start(ctx context.Context, name, prompt string) running {
	h.t.Helper()
	h.mu.Lock()
	node := h.nodes[name]
	h.mu.Unlock()
	now := time.Now()
	sess := session.Session{ID: id.Descending(id.Session), AgentName: name, SourceType: node.SourceType(), Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := h.store.CreateSession(ctx, sess); err != nil {
		h.t.Fatal(err)
	}
	sink, events := eventtest.Collect()
	inv := mustRoot(h.t)(h.rt.NewRoot(sess, id.Ascending(id.Run), prompt, nil, sink))
	r := running{root: sess.ID, done: make(chan runOut, 1)}
	go func() {
		end := h.rt.RunRoot(ctx, node, inv, now)
		r.done <- runOut{root: sess.ID, res: end.Result, evs: events()}
	}()
	return r
}

// wait returns the run's end and checks its stream (every child ended
// exactly once).
func (r running) wait(t *testing.T) runOut {
	t.Helper()
	out := <-r.done
	if err := eventtest.CheckInvariants(out.root, out.evs); err != nil {
		t.Errorf("stream: %v", err)
	}
	n := map[string]int{}
	for _, p := range unwrapAll(out.root, out.evs) {
		if e, ok := p.ev.(event.SpawnSessionEnd); ok {
			n[e.ChildSessionID]++
		}
	}
	for sid, k := range n {
		if k != 1 {
			t.Errorf("%d ends of %s", k, sid)
		}
	}
	return out
}

// cancel cancels a session and waits for its run to end.
func (h *harness) cancel(sid string) {
	h.t.Helper()
	done, err := h.rt.Cancel(context.Background(), sid, "the test")
	if err != nil {
		h.t.Fatalf("cancel %s: %v", sid, err)
	}
	<-done
	if h.rt.Running(sid) {
		h.t.Fatalf("%s runs after its cancel ended", sid)
	}
}

func (h *harness) status(sid string) session.Status {
	h.t.Helper()
	s, err := h.store.GetSession(context.Background(), sid)
	if err != nil {
		h.t.Fatal(err)
	}
	return s.Status
}

func byName(root string, evs []event.Event) map[string]event.SpawnSessionEnd {
	out := map[string]event.SpawnSessionEnd{}
	for _, e := range ends(root, evs) {
		out[e.SourceName] = e
	}
	return out
}

const cancelledWords = "cancelled by the user (from the test)"

// A parallel team of three: one member cancelled mid-run ends aborted,
// the other two complete, the team goes on (without require_all) and its
// caller reads all three outcomes; with require_all the team fails, and
// its caller still goes on.
func TestCancelTeamMember(t *testing.T) {
	for _, requireAll := range []bool{false, true} {
		name := "any"
		if requireAll {
			name = "require_all"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, spawn.Limits{})
			ready := make(chan started, 3)
			release := make(chan struct{})
			h.agent("a", gatedModel(ready, "a", release, "a finished"))
			h.agent("b", blockedModel(ready, "b"))
			h.agent("c", gatedModel(ready, "c", release, "c finished"))
			tm, err := team.New(team.Config{Name: "panel", Mode: team.Parallel, Members: []string{"a", "b", "c"}, RequireAll: requireAll})
			if err != nil {
				t.Fatal(err)
			}
			h.add(tm)
			lead := delegating(call{name: "task", args: map[string]any{"agent_or_team": "panel", "prompt": "review"}})
			h.agent("lead", lead)

			r := h.start(context.Background(), "lead", "go")
			sids := map[string]string{}
			for range 3 {
				s := <-ready
				sids[s.name] = s.session
			}
			h.cancel(sids["b"])
			if h.status(sids["b"]) != session.StatusAborted || !h.rt.Running(sids["a"]) || !h.rt.Running(sids["c"]) {
				t.Fatalf("after the cancel: b %s, a running %v, c running %v", h.status(sids["b"]), h.rt.Running(sids["a"]), h.rt.Running(sids["c"]))
			}
			close(release)
			out := r.wait(t)

			if out.res.StopReason != event.StopCompleted {
				t.Fatalf("lead: %+v", out.res)
			}
			es := byName(out.root, out.evs)
			if es["b"].StopReason != event.StopAborted || !strings.Contains(es["b"].Error, cancelledWords) {
				t.Errorf("b's end: %+v", es["b"])
			}
			for _, m := range []string{"a", "c"} {
				if es[m].StopReason != event.StopCompleted {
					t.Errorf("%s's end: %+v", m, es[m])
				}
			}
			wantTeam := event.StopCompleted
			if requireAll {
				wantTeam = event.StopError
			}
			if es["panel"].StopReason != wantTeam {
				t.Errorf("panel's end: %+v", es["panel"])
			}
			// The lead's tool result has all three outcomes.
			if !contains(out.res.Output, "[a]", "a finished", "[c]", "c finished", "[b] cancelled", cancelledWords) {
				t.Errorf("lead saw %q", out.res.Output)
			}
			if requireAll && !contains(out.res.Output, "require_all") {
				t.Errorf("lead saw %q", out.res.Output)
			}
		})
	}
}

// A grandchild cancelled: it ends aborted, its parent reads the
// cancellation as its tool result and completes, and so does the root.
// A child cancelled with a running child of its own ends aborted with
// that subtree, and the root goes on.
func TestCancelNested(t *testing.T) {
	t.Run("grandchild", func(t *testing.T) {
		h := newHarness(t, spawn.Limits{})
		ready := make(chan started, 1)
		h.agent("leaf", blockedModel(ready, "leaf"))
		h.agent("mid", delegating(call{name: "task", args: map[string]any{"agent_or_team": "leaf", "prompt": "dig"}}))
		h.agent("root", delegating(call{name: "task", args: map[string]any{"agent_or_team": "mid", "prompt": "go"}}))
		r := h.start(context.Background(), "root", "go")
		leaf := <-ready
		h.cancel(leaf.session)
		out := r.wait(t)
		es := byName(out.root, out.evs)
		if out.res.StopReason != event.StopCompleted || es["mid"].StopReason != event.StopCompleted || es["leaf"].StopReason != event.StopAborted {
			t.Fatalf("root %s, mid %s, leaf %s", out.res.StopReason, es["mid"].StopReason, es["leaf"].StopReason)
		}
		// mid read the cancellation (its answer quotes its tool result),
		// and root read mid's answer.
		if !contains(es["mid"].LastAssistantMessage, `"stop_reason":"aborted"`, `"cancelled_by":"the test"`, cancelledWords) {
			t.Errorf("mid saw %q", es["mid"].LastAssistantMessage)
		}
		if h.status(leaf.session) != session.StatusAborted || h.status(es["mid"].ChildSessionID) != session.StatusCompleted {
			t.Errorf("stored: leaf %s, mid %s", h.status(leaf.session), h.status(es["mid"].ChildSessionID))
		}
	})
	t.Run("subtree", func(t *testing.T) {
		h := newHarness(t, spawn.Limits{})
		ready := make(chan started, 1)
		h.agent("leaf", blockedModel(ready, "leaf"))
		h.agent("mid", delegating(call{name: "task", args: map[string]any{"agent_or_team": "leaf", "prompt": "dig"}}))
		h.agent("root", delegating(call{name: "task", args: map[string]any{"agent_or_team": "mid", "prompt": "go"}}))
		r := h.start(context.Background(), "root", "go")
		<-ready
		var mid string
		for _, s := range sessionsNamed(t, h.store, "mid") {
			mid = s.ID
		}
		h.cancel(mid)
		out := r.wait(t)
		es := byName(out.root, out.evs)
		if out.res.StopReason != event.StopCompleted || es["mid"].StopReason != event.StopAborted || es["leaf"].StopReason != event.StopAborted {
			t.Fatalf("root %s, mid %s, leaf %s", out.res.StopReason, es["mid"].StopReason, es["leaf"].StopReason)
		}
		if !contains(out.res.Output, "cancelled_by", cancelledWords) {
			t.Errorf("root saw %q", out.res.Output)
		}
	})
}

// A background child cancelled: its result reaches the parent as the
// injected message of an ended task, and the parent completes.
func TestCancelAsync(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	ready := make(chan started, 1)
	h.agent("bg", blockedModel(ready, "bg"))
	h.agent("root", newFnModel(func(_ context.Context, turn int, req *model.Request) reply {
		if turn == 0 {
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "bg", "prompt": "work", "async_mode": true}}}}
		}
		// The task's end may come before this turn or after it.
		return reply{text: "saw: " + everything(req)}
	}))
	r := h.start(context.Background(), "root", "go")
	bg := <-ready
	h.cancel(bg.session)
	out := r.wait(t)
	if out.res.StopReason != event.StopCompleted || !contains(out.res.Output, "Background task", "ended with aborted", cancelledWords) {
		t.Fatalf("root: %+v", out.res)
	}
	if e := byName(out.root, out.evs)["bg"]; e.StopReason != event.StopAborted {
		t.Errorf("bg's end: %+v", e)
	}
}

// Cancelling the root's own session ends the whole run; an unknown or
// finished session is an error that says which.
func TestCancelRootAndErrors(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	ready := make(chan started, 1)
	h.agent("leaf", blockedModel(ready, "leaf"))
	h.agent("root", delegating(call{name: "task", args: map[string]any{"agent_or_team": "leaf", "prompt": "dig"}}))
	r := h.start(context.Background(), "root", "go")
	leaf := <-ready
	h.cancel(r.root)
	out := r.wait(t)
	if out.res.StopReason != event.StopAborted || byName(out.root, out.evs)["leaf"].StopReason != event.StopAborted {
		t.Fatalf("root %+v", out.res)
	}
	if h.status(r.root) != session.StatusAborted || h.status(leaf.session) != session.StatusAborted {
		t.Errorf("stored: root %s, leaf %s", h.status(r.root), h.status(leaf.session))
	}
	ctx := context.Background()
	if _, err := h.rt.Cancel(ctx, leaf.session, "x"); !errors.Is(err, spawn.ErrNotRunning) || !strings.Contains(err.Error(), "aborted") {
		t.Errorf("cancel of an ended session: %v", err)
	}
	if _, err := h.rt.Cancel(ctx, "ses_nope", "x"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("cancel of an unknown session: %v", err)
	}
	// A stored session that runs, but not here, is another process's.
	now := time.Now()
	other := session.Session{ID: id.Descending(id.Session), AgentName: "root", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := h.store.CreateSession(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := h.rt.Cancel(ctx, other.ID, "x"); !errors.Is(err, spawn.ErrRunsElsewhere) {
		t.Errorf("cancel of another process's session: %v", err)
	}
}
