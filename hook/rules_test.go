package hook_test

// One test per rule of docs/spec/HOOKS.md §3 (the subagent lifecycle).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/spawn"
)

// Rule 1: subagent/start fires only after the child is ready (stored and
// registered), and context injected by a listener is part of the child's
// first model request.
func TestRule1StartAfterReadyAndInjectReachesFirstRequest(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			reg := hook.New(hook.Options{})
			h := newHarness(t, reg, spawn.Limits{})
			child := scripted(t, text("child done"))
			h.agent("child", child)
			h.agent("parent", scripted(t,
				callTurn("task", map[string]any{"agent_or_team": "child", "prompt": "do the child task", "async_mode": async}),
				text("parent done")), spawn.SubagentTools()...)

			var mu sync.Mutex
			var problems []string
			started := 0
			reg.OnSubagentStart.Register(func(ctx context.Context, s hook.SubagentStart) error {
				mu.Lock()
				defer mu.Unlock()
				started++
				if _, err := h.store.GetSession(ctx, s.ID); err != nil {
					problems = append(problems, "child not stored at subagent/start: "+err.Error())
				}
				if !h.rt.Running(s.ID) {
					problems = append(problems, "child not registered at subagent/start")
				}
				if len(child.requests()) != 0 {
					problems = append(problems, "child made a model request before subagent/start")
				}
				return hook.Inject(ctx, s.ID, "INJECTED-AT-START for "+s.Name)
			})

			res, _, _ := h.run(context.Background(), "parent", "go")
			if res.StopReason != event.StopCompleted {
				t.Fatalf("run ended %s: %v", res.StopReason, res.Err)
			}
			mu.Lock()
			defer mu.Unlock()
			if started != 1 {
				t.Fatalf("subagent/start fired %d times, want 1", started)
			}
			for _, p := range problems {
				t.Error(p)
			}
			reqs := child.requests()
			if len(reqs) == 0 {
				t.Fatal("child made no model request")
			}
			first := texts(reqs[0])
			if !strings.Contains(first, "INJECTED-AT-START for child") || !strings.Contains(first, "do the child task") {
				t.Errorf("child's first request lacks the prompt or the injected context:\n%s", first)
			}
		})
	}
}

// panicNode is a node whose run panics: an infrastructure fault (no result).
type panicNode struct{ name string }

func (p panicNode) Name() string                 { return p.name }
func (p panicNode) Description() string          { return "" }
func (p panicNode) SourceType() event.SourceType { return event.SourceAgent }
func (p panicNode) ModelID() string              { return "" }
func (p panicNode) Run(context.Context, *spawn.Invocation) spawn.Result {
	panic("node exploded")
}

// Rule 2: subagent/end fires only after subagent/start, exactly once, for
// every way a child can end.
func TestRule2EndExactlyOnceAfterStart(t *testing.T) {
	reg := hook.New(hook.Options{})
	var lc lifecycleLog
	lc.register(reg)
	var mu sync.Mutex
	ends := map[string]hook.SubagentEnd{}
	reg.OnSubagentEnd.Register(func(_ context.Context, e hook.SubagentEnd) error {
		mu.Lock()
		ends[e.Name] = e
		mu.Unlock()
		return nil
	})
	h := newHarness(t, reg, spawn.Limits{})
	h.agent("ok", scripted(t, text("fine")))
	h.agent("bad", scripted(t, testmodel.Turn{Error: "provider exploded"}))
	h.agent("later", scripted(t, testmodel.Turn{Text: "background done", Delay: 5 * time.Millisecond}))
	h.add(panicNode{name: "boom"})
	h.agent("parent", scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{
			{Name: "task", Args: map[string]any{"agent_or_team": "ok", "prompt": "a"}},
			{Name: "task", Args: map[string]any{"agent_or_team": "bad", "prompt": "b"}},
			{Name: "task", Args: map[string]any{"agent_or_team": "later", "prompt": "c", "async_mode": true}},
			{Name: "task", Args: map[string]any{"agent_or_team": "boom", "prompt": "d"}},
		}},
		text("parent done")), spawn.SubagentTools()...)

	res, _, _ := h.run(context.Background(), "parent", "go")
	if res.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.StopReason, res.Err)
	}
	checkStartEnd(t, lc.entries(), 4)
	mu.Lock()
	defer mu.Unlock()
	want := map[string]event.StopReason{"ok": event.StopCompleted, "bad": event.StopError, "later": event.StopCompleted, "boom": event.StopError}
	for name, stop := range want {
		if got := ends[name].StopReason; got != stop {
			t.Errorf("%s: stop_reason %q, want %q", name, got, stop)
		}
	}
	// Rule 4: an infrastructure fault has no last_assistant_message.
	if ends["boom"].LastAssistantMessage != nil {
		t.Errorf("boom: last_assistant_message = %v, want absent", ends["boom"].LastAssistantMessage)
	}
	if got := ends["ok"].LastAssistantMessage; len(got) != 1 || got[0].Text != "fine" {
		t.Errorf("ok: last_assistant_message = %+v", got)
	}
}

// Rule 2, cancellation: a child cancelled mid-run still gets its one end.
func TestRule2EndOnCancellation(t *testing.T) {
	reg := hook.New(hook.Options{})
	var lc lifecycleLog
	lc.register(reg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg.OnSubagentStart.Register(func(context.Context, hook.SubagentStart) error {
		time.AfterFunc(20*time.Millisecond, cancel)
		return nil
	})
	h := newHarness(t, reg, spawn.Limits{})
	h.agent("slow", scripted(t, testmodel.Turn{Text: strings.Repeat("word ", 200), Delay: 10 * time.Millisecond}))
	h.agent("parent", scripted(t, callTurn("task", map[string]any{"agent_or_team": "slow", "prompt": "x"}), text("never")), spawn.SubagentTools()...)
	res, _, _ := h.run(ctx, "parent", "go")
	if res.StopReason != event.StopAborted {
		t.Fatalf("run ended %s, want aborted", res.StopReason)
	}
	entries := checkStartEnd(t, lc.entries(), 1)
	if !strings.HasSuffix(entries[1], ":"+string(event.StopAborted)) {
		t.Errorf("end = %s, want stop_reason aborted", entries[1])
	}
}

// checkStartEnd checks that each child has one start followed by one end,
// for n children, and returns the log.
func checkStartEnd(t *testing.T, log []string, n int) []string {
	t.Helper()
	state := map[string]string{}
	for _, e := range log {
		kind, rest, _ := strings.Cut(e, ":")
		id, _, _ := strings.Cut(rest, ":")
		switch kind {
		case "start":
			if state[id] != "" {
				t.Errorf("second start for %s", id)
			}
			state[id] = "started"
		case "end":
			switch state[id] {
			case "":
				t.Errorf("end before start for %s", id)
			case "ended":
				t.Errorf("second end for %s", id)
			}
			state[id] = "ended"
		}
	}
	if len(state) != n {
		t.Errorf("%d children seen, want %d: %v", len(state), n, log)
	}
	for id, s := range state {
		if s != "ended" {
			t.Errorf("child %s never ended", id)
		}
	}
	return log
}

// Rule 3: a child that never becomes ready fires neither event; the
// spawning tool returns an error the model sees.
func TestRule3ReadinessFailureFiresNeither(t *testing.T) {
	reg := hook.New(hook.Options{})
	var lc lifecycleLog
	lc.register(reg)
	h := newHarness(t, reg, spawn.Limits{MaxDepth: 1})
	h.agent("grandchild", scripted(t, text("unreachable")))
	child := scripted(t, callTurn("task", map[string]any{"agent_or_team": "grandchild", "prompt": "deeper"}), text("child done"))
	h.agent("child", child, spawn.SubagentTools()...)
	h.agent("parent", scripted(t, callTurn("task", map[string]any{"agent_or_team": "child", "prompt": "x"}), text("parent done")), spawn.SubagentTools()...)

	res, _, _ := h.run(context.Background(), "parent", "go")
	if res.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.StopReason, res.Err)
	}
	checkStartEnd(t, lc.entries(), 1) // the child only
	reqs := child.requests()
	if len(reqs) < 2 || !strings.Contains(texts(reqs[1]), "depth limit") {
		t.Errorf("the child's model did not see the depth-limit error")
	}

	// A spawn of no node fails before anything is created.
	var out sink
	inv := h.root("parent", "", &out)
	if _, err := spawn.Spawn(context.Background(), inv, spawn.Request{}); !errors.Is(err, spawn.ErrUnknownNode) {
		t.Errorf("Spawn(no node) = %v, want ErrUnknownNode", err)
	}
	h.rt.Release(inv)
	checkStartEnd(t, lc.entries(), 1)
	if len(out.events()) != 0 {
		t.Errorf("failed spawn emitted %v", out.events())
	}
}

// Rule 4: last_assistant_message is a deep copy taken when the child
// settles; a listener that mutates it changes nothing the caller or the
// next listener sees.
func TestRule4LastAssistantMessageMutationIsolated(t *testing.T) {
	reg := hook.New(hook.Options{})
	const final = "the final answer"
	var seenBySecond []model.Part
	reg.OnSubagentEnd.Register(func(_ context.Context, e hook.SubagentEnd) error {
		if len(e.LastAssistantMessage) == 0 {
			return errors.New("no last_assistant_message")
		}
		for i := range e.LastAssistantMessage {
			e.LastAssistantMessage[i].Text = "MUTATED BY LISTENER"
			e.LastAssistantMessage[i].Kind = model.PartToolResult
		}
		e.LastAssistantMessage = append(e.LastAssistantMessage, model.Part{Kind: model.PartText, Text: "extra"})
		return nil
	})
	reg.OnSubagentEnd.Register(func(_ context.Context, e hook.SubagentEnd) error {
		seenBySecond = model.CloneParts(e.LastAssistantMessage)
		for i := range e.LastAssistantMessage {
			e.LastAssistantMessage[i].Text = "MUTATED AGAIN"
		}
		return nil
	})
	h := newHarness(t, reg, spawn.Limits{})
	childAgent := h.agent("child", scripted(t, testmodel.Turn{Thinking: "hmm", Text: final}))
	var out sink
	inv := h.root("parent", "", &out)
	child, err := spawn.Spawn(context.Background(), inv, spawn.Request{Node: childAgent, Prompt: "answer"})
	h.rt.Release(inv)
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Part{{Kind: model.PartThinking, Text: "hmm"}, {Kind: model.PartText, Text: final}}
	if !reflect.DeepEqual(seenBySecond, want) {
		t.Errorf("second listener saw %+v, want the untouched %+v", seenBySecond, want)
	}
	if child.Result.Output != final {
		t.Errorf("caller's output = %q", child.Result.Output)
	}
	last := child.Result.Messages[len(child.Result.Messages)-1]
	if last.Text() != final {
		t.Errorf("caller's last message = %q", last.Text())
	}
	for _, e := range out.events() {
		if end, ok := e.(event.SpawnSessionEnd); ok && end.LastAssistantMessage != final {
			t.Errorf("spawn_session_end last_assistant_message = %q", end.LastAssistantMessage)
		}
	}
	stored := h.messages(child.SessionID)
	if got := stored[len(stored)-1].Text(); got != final {
		t.Errorf("stored last message = %q", got)
	}
}

// Rule 4: a failing copy is logged and the event still fires without the
// field.
func TestRule4CopyFailureFiresWithoutField(t *testing.T) {
	restore := hook.SetCloneParts(func([]model.Part) []model.Part { panic("cannot copy") })
	defer restore()
	reg := hook.New(hook.Options{})
	var got []hook.SubagentEnd
	reg.OnSubagentEnd.Register(func(_ context.Context, e hook.SubagentEnd) error {
		got = append(got, e)
		return nil
	})
	h := newHarness(t, reg, spawn.Limits{})
	childAgent := h.agent("child", scripted(t, text("answer")))
	var out sink
	inv := h.root("parent", "", &out)
	child, err := spawn.Spawn(context.Background(), inv, spawn.Request{Node: childAgent, Prompt: "x"})
	h.rt.Release(inv)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("subagent/end fired %d times, want 1", len(got))
	}
	if got[0].LastAssistantMessage != nil || got[0].StopReason != event.StopCompleted || got[0].ID != child.SessionID {
		t.Errorf("end = %+v, want the event without last_assistant_message", got[0])
	}
}

// gated delays a node's run until its gate is closed.
type gated struct {
	spawn.Node
	gate chan struct{}
}

func (g gated) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	<-g.gate
	return g.Node.Run(ctx, inv)
}

// Rule 5: inputs the runtime acts on later are snapshotted when received.
func TestRule5InputsSnapshotted(t *testing.T) {
	t.Run("approval request", func(t *testing.T) {
		reg := hook.New(hook.Options{})
		received, mutated := make(chan struct{}), make(chan struct{})
		var seen string
		reg.OnApproval.Use(func(_ context.Context, r hook.ApprovalRequest, _ hook.Next[hook.ApprovalRequest, hook.ApprovalDecision]) hook.ApprovalDecision {
			close(received)
			<-mutated
			seen = string(r.Input) + "|" + r.Reason
			return hook.ApprovalDecision{Outcome: hook.AllowedOnce}
		})
		input := json.RawMessage(`{"path":"/tmp/safe"}`)
		req := hook.ApprovalRequest{ToolName: "rm", Input: input, Reason: "asks"}
		done := make(chan hook.ApprovalDecision)
		go func() { done <- reg.RequestApproval(context.Background(), req) }()
		<-received
		copy(input, `{"path":"/etc/pwnd"}`)
		close(mutated)
		if d := <-done; d.Outcome != hook.AllowedOnce {
			t.Errorf("outcome %q", d.Outcome)
		}
		if seen != `{"path":"/tmp/safe"}|asks` {
			t.Errorf("approver saw %s", seen)
		}
	})
	t.Run("subagent request", func(t *testing.T) {
		h := newHarness(t, hook.New(hook.Options{}), spawn.Limits{})
		m := scripted(t, text("ok"))
		a := h.agent("child", m)
		g := gated{Node: a, gate: make(chan struct{})}
		var out sink
		inv := h.root("parent", "", &out)
		history := []model.Message{model.UserText("original history")}
		child, err := spawn.Spawn(context.Background(), inv, spawn.Request{Node: g, Prompt: "go on", History: history, Async: true})
		if err != nil {
			t.Fatal(err)
		}
		history[0].Parts[0].Text = "CHANGED BY CALLER"
		close(g.gate)
		task, _ := inv.Task(child.TaskID)
		<-task.Done()
		h.rt.Release(inv)
		reqs := m.requests()
		if len(reqs) == 0 {
			t.Fatal("no request")
		}
		if got := texts(reqs[0]); !strings.Contains(got, "original history") || strings.Contains(got, "CHANGED") {
			t.Errorf("child's request:\n%s", got)
		}
	})
}

// Rule 6: nothing injected before teardown is lost: what the agent did not
// deliver is stored with the session's conversation, and an injection that
// races with teardown is either stored or refused with an error.
func TestRule6PendingInjectionsStoredAtTeardown(t *testing.T) {
	t.Run("injected after the last request", func(t *testing.T) {
		reg := hook.New(hook.Options{})
		var (
			childID  string
			childInv *spawn.Invocation
		)
		reg.OnTurnStop.Use(func(ctx context.Context, s hook.TurnStop, next hook.Next[hook.TurnStop, hook.StopDecision]) hook.StopDecision {
			childID, childInv = s.SessionID, spawn.InvocationFrom(ctx)
			if err := hook.Inject(ctx, s.SessionID, "LATE NOTE"); err != nil {
				t.Errorf("inject: %v", err)
			}
			return next(ctx, s)
		}, hook.ForAgent("child"))
		h := newHarness(t, reg, spawn.Limits{})
		h.agent("child", scripted(t, text("child done")))
		h.agent("parent", scripted(t, callTurn("task", map[string]any{"agent_or_team": "child", "prompt": "x"}), text("done")), spawn.SubagentTools()...)
		h.run(context.Background(), "parent", "go")
		found := false
		for _, m := range h.messages(childID) {
			if m.Synthetic && m.Text() == "LATE NOTE" {
				found = true
			}
		}
		if !found {
			t.Error("the injection pending at teardown was not stored")
		}
		if err := h.rt.Inject(childID, "after"); err == nil {
			t.Error("Inject into an ended session succeeded")
		}
		// Whoever still holds the session's inbox is refused too: an
		// injection racing with teardown is never queued where nobody
		// will read it.
		if childInv.Inbox().TryInject("too late") {
			t.Error("the inbox of an ended session accepted an injection")
		}
	})
	t.Run("racing injections", func(t *testing.T) {
		reg := hook.New(hook.Options{})
		h := newHarness(t, reg, spawn.Limits{})
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			accepted []string
			childID  string
		)
		// Bursts of injections: one as the child starts, one from each of
		// its first turn stops, each racing the run's decision to take
		// another turn or to end. After the last burst nothing more is
		// injected, so the child ends (an injector that never pauses
		// keeps it taking injected turns). No pace in time is needed.
		const bursts, perBurst = 6, 50
		var next, started atomic.Int64
		burst := func(id string) {
			wg.Go(func() {
				for range perBurst {
					msg := fmt.Sprintf("n%d", next.Add(1))
					if err := h.rt.Inject(id, msg); err != nil {
						return // ended
					}
					mu.Lock()
					accepted = append(accepted, msg)
					mu.Unlock()
				}
			})
		}
		reg.OnSubagentStart.Register(func(_ context.Context, s hook.SubagentStart) error {
			childID = s.ID
			started.Add(1)
			burst(s.ID)
			return nil
		})
		reg.OnTurnStop.Use(func(ctx context.Context, s hook.TurnStop, next hook.Next[hook.TurnStop, hook.StopDecision]) hook.StopDecision {
			if s.IsSubagent() && started.Add(1) <= bursts {
				burst(s.SessionID)
			}
			return next(ctx, s)
		})
		h.agent("child", scripted(t, testmodel.Turn{Text: "child done", Delay: time.Millisecond}))
		h.agent("parent", scripted(t, callTurn("task", map[string]any{"agent_or_team": "child", "prompt": "x"}), text("done")), spawn.SubagentTools()...)
		h.run(context.Background(), "parent", "go")
		wg.Wait()
		stored := map[string]int{}
		for _, m := range h.messages(childID) {
			if m.Synthetic {
				for _, p := range m.Parts {
					stored[p.Text]++
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(accepted) == 0 {
			t.Fatal("no injection was accepted")
		}
		t.Logf("%d of %d injections accepted", len(accepted), next.Load())
		for _, a := range accepted {
			if stored[a] != 1 {
				t.Fatalf("accepted injection %s stored %d times (of %d accepted)", a, stored[a], len(accepted))
			}
		}
	})
}
