package spawn_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/team"
	"github.com/agentpool/agentpool/tool"
)

// lastResult decodes the last tool result of req into a map.
func lastResult(t *testing.T, req *model.Request) map[string]string {
	t.Helper()
	parts := toolResults(req.Messages)
	if len(parts) == 0 {
		t.Errorf("no tool result in the request")
		return nil
	}
	out := map[string]string{}
	if err := json.Unmarshal([]byte(parts[len(parts)-1].Text), &out); err != nil {
		t.Errorf("tool result %q: %v", parts[len(parts)-1].Text, err)
	}
	return out
}

// everything is what a request carries that a test reads back: tool
// results and injected (synthetic) messages, one a line.
func everything(req *model.Request) string {
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
	return b.String()
}

// A running background child messaged by its parent (send_message) while
// its model is at work reads the message, as a user message from its
// parent, at its next turn; its stream shows the message there.
func TestMessageRunningChild(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	ready := make(chan started, 1)
	release := make(chan struct{})
	child := newFnModel(func(ctx context.Context, turn int, req *model.Request) reply {
		if turn == 0 {
			ready <- started{"worker", spawn.InvocationFrom(ctx).Session.ID}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return reply{text: "first answer"}
		}
		return reply{text: "got: " + req.Messages[len(req.Messages)-1].Text()}
	})
	h.agent("worker", child)
	h.agent("lead", newFnModel(func(_ context.Context, turn int, req *model.Request) reply {
		switch turn {
		case 0:
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "worker", "prompt": "work", "async_mode": true}}}}
		case 1:
			w := <-ready // the child's model is at work
			return reply{calls: []call{{name: "send_message", args: map[string]any{"session_id": w.session, "message": "also check the tests"}}}}
		case 2:
			if r := lastResult(t, req); r["status"] != "running" || !strings.Contains(r["delivered"], "next turn") {
				t.Errorf("send_message: %v", r)
			}
			close(release)
			return reply{text: "waiting"}
		}
		return reply{text: "saw: " + everything(req)}
	}))
	out := h.start(context.Background(), "lead", "go").wait(t)
	if out.res.StopReason != event.StopCompleted || !contains(out.res.Output, "Background task", "completed", "got: Message from your parent agent lead", "also check the tests") {
		t.Fatalf("lead: %+v", out.res)
	}
	// The child's second request ends with the message, a user message.
	reqs := child.requests()
	if len(reqs) != 2 {
		t.Fatalf("worker made %d requests, want 2", len(reqs))
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != model.RoleUser || !contains(last.Text(), "Message from your parent agent lead (session "+out.root+")", "also check the tests") {
		t.Errorf("worker's second request ends with %+v", last)
	}
	// The message event is in the child's stream, between its two turns.
	var kinds []string
	for _, p := range unwrapAll(out.root, out.evs) {
		if p.session == out.root {
			continue
		}
		switch e := p.ev.(type) {
		case event.Custom:
			if e.EventType == spawn.EventSessionMessage {
				if e.EventData["from"] != "parent" || e.EventData["by"] != "lead" || e.EventData["text"] != "also check the tests" {
					t.Errorf("message event %+v", e.EventData)
				}
				kinds = append(kinds, "message")
			}
		case event.PartStart:
			if e.Part.PartKind == event.PartText {
				kinds = append(kinds, "text")
			}
		}
	}
	if strings.Join(kinds, ",") != "text,message,text" {
		t.Errorf("worker's stream: %v", kinds)
	}
}

// A finished child messaged by its parent is continued in its session,
// with its conversation, and its new answer is the tool's result; the
// stream starts it again, marked resumed.
func TestMessageFinishedChild(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	child := newFnModel(func(_ context.Context, _ int, req *model.Request) reply {
		return reply{text: "answer to: " + req.Messages[len(req.Messages)-1].Text()}
	})
	h.agent("worker", child)
	var sid string
	h.agent("lead", newFnModel(func(_ context.Context, turn int, req *model.Request) reply {
		switch turn {
		case 0:
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "worker", "prompt": "first"}}}}
		case 1:
			sid = lastResult(t, req)["session_id"]
			return reply{calls: []call{{name: "send_message", args: map[string]any{"session_id": sid, "message": "second"}}}}
		}
		r := lastResult(t, req)
		return reply{text: r["session_id"] + " said " + r["output"]}
	}))
	out := h.run(context.Background(), "lead", "go")
	if out.res.StopReason != event.StopCompleted || out.res.Output != sid+" said answer to: second" {
		t.Fatalf("lead: %+v", out.res)
	}
	reqs := child.requests()
	if len(reqs) != 2 {
		t.Fatalf("worker made %d requests, want 2", len(reqs))
	}
	var texts []string
	for _, m := range reqs[1].Messages {
		texts = append(texts, string(m.Role)+":"+m.Text())
	}
	if got := strings.Join(texts, "|"); got != "user:first|assistant:answer to: first|user:second" {
		t.Errorf("the continued worker's conversation: %s", got)
	}
	st := starts(out.root, out.evs)
	if len(st) != 2 || st[0].ChildSessionID != sid || st[1].ChildSessionID != sid || st[1].Metadata[spawn.MetaResumed] != "parent" || st[0].Metadata[spawn.MetaResumed] != nil {
		t.Errorf("starts: %+v", st)
	}
	rec, err := h.store.GetSession(context.Background(), sid)
	if err != nil || rec.Status != session.StatusCompleted || rec.Usage.OutputTokens != 2 {
		t.Errorf("stored worker: %+v, %v", rec, err)
	}
	msgs, _ := h.store.Messages(context.Background(), sid)
	if len(msgs) != 4 {
		t.Errorf("stored conversation has %d messages, want 4", len(msgs))
	}
}

// task_stop stops one background child, which ends aborted with words
// that say its parent stopped it; its sibling goes on and completes, and
// so does the parent.
func TestTaskStop(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	ready := make(chan started, 2)
	release := make(chan struct{})
	h.agent("a", blockedModel(ready, "a"))
	h.agent("b", gatedModel(ready, "b", release, "b finished"))
	h.agent("lead", newFnModel(func(_ context.Context, turn int, req *model.Request) reply {
		switch turn {
		case 0:
			return reply{calls: []call{
				{name: "task", args: map[string]any{"agent_or_team": "a", "prompt": "x", "async_mode": true}},
				{name: "task", args: map[string]any{"agent_or_team": "b", "prompt": "y", "async_mode": true}},
			}}
		case 1:
			sids := map[string]string{}
			for range 2 {
				s := <-ready
				sids[s.name] = s.session
			}
			return reply{calls: []call{{name: "task_stop", args: map[string]any{"session_id": sids["a"]}}}}
		case 2:
			if r := lastResult(t, req); r["status"] != "aborted" || !strings.Contains(r["stopped"], "a (session ") || r["task_id"] == "" {
				t.Errorf("task_stop: %v", r)
			}
			close(release)
			return reply{text: "waiting"}
		}
		return reply{text: "saw: " + everything(req)}
	}))
	out := h.start(context.Background(), "lead", "go").wait(t)
	es := byName(out.root, out.evs)
	const words = "was stopped by its parent agent lead (task_stop)"
	if es["a"].StopReason != event.StopAborted || !strings.Contains(es["a"].Error, words) || es["b"].StopReason != event.StopCompleted {
		t.Fatalf("a %+v, b %+v", es["a"], es["b"])
	}
	if out.res.StopReason != event.StopCompleted || !contains(out.res.Output, "ended with aborted", words, "b finished") {
		t.Errorf("lead: %+v", out.res)
	}
	if got := spawn.AbortedWords(es["a"].Error); got != "Stopped by its parent agent lead (task_stop)." {
		t.Errorf("AbortedWords: %q", got)
	}
}

// task_output with block waits for the task's end; with a short bound it
// says the task still runs.
func TestTaskOutputBlock(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	ready := make(chan started, 1)
	release := make(chan struct{})
	h.agent("w", gatedModel(ready, "w", release, "w finished"))
	var taskID string
	h.agent("lead", newFnModel(func(_ context.Context, turn int, req *model.Request) reply {
		switch turn {
		case 0:
			return reply{calls: []call{{name: "task", args: map[string]any{"agent_or_team": "w", "prompt": "x", "async_mode": true}}}}
		case 1:
			taskID = lastResult(t, req)["task_id"]
			<-ready
			return reply{calls: []call{{name: "task_output", args: map[string]any{"task_id": taskID, "block": true, "timeout_ms": 1}}}}
		case 2:
			if r := lastResult(t, req); r["status"] != "running" || !strings.Contains(r["waited"], "still runs") {
				t.Errorf("short wait: %v", r)
			}
			close(release)
			return reply{calls: []call{{name: "task_output", args: map[string]any{"task_id": taskID, "block": true}}}}
		case 3:
			if r := lastResult(t, req); r["status"] != "completed" || r["output"] != "w finished" {
				t.Errorf("blocking wait: %v", r)
			}
			return reply{calls: []call{{name: "task_output", args: map[string]any{"task_id": taskID, "timeout_ms": 5}}}}
		}
		return reply{text: "done: " + everything(req)}
	}))
	out := h.start(context.Background(), "lead", "go").wait(t)
	if !contains(out.res.Output, "timeout_ms is for block: true") {
		t.Errorf("lead: %+v", out.res)
	}
}

// The errors of send_message and task_stop: no id, an unknown task or
// session, another parent's child, a cancelled child, an empty message.
func TestSteeringErrors(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	ctx := context.Background()
	ready := make(chan started, 1)
	h.agent("leaf", blockedModel(ready, "leaf"))
	h.agent("root", delegating(call{name: "task", args: map[string]any{"agent_or_team": "leaf", "prompt": "dig"}}))
	r := h.start(ctx, "root", "go")
	leaf := <-ready
	h.cancel(leaf.session)
	r.wait(t)

	// A second root of the same runtime, whose tools are called by hand.
	rec := session.Session{ID: id.Descending(id.Session), AgentName: "root", Status: session.StatusRunning}
	if err := h.store.CreateSession(ctx, rec); err != nil {
		t.Fatal(err)
	}
	inv := mustRoot(t)(h.rt.NewRoot(rec, id.Ascending(id.Run), "", nil, event.SinkFunc(func(event.Event) {})))
	defer h.rt.Release(inv)
	tools := map[string]tool.Tool{}
	for _, tl := range spawn.SubagentTools() {
		tools[tl.Info().Name] = tl
	}
	callTool := func(name string, args map[string]any) tool.Result {
		b, _ := json.Marshal(args)
		return tool.Run(spawn.WithInvocation(ctx, inv), tools[name], tool.Call{ID: "c1", Name: name, Args: b})
	}
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"send_message", map[string]any{"message": "hi"}, "task_id or session_id is required"},
		{"send_message", map[string]any{"task_id": "task_nope", "message": "hi"}, `unknown task "task_nope"`},
		{"send_message", map[string]any{"session_id": "ses_nope", "message": "hi"}, `unknown session "ses_nope"`},
		{"send_message", map[string]any{"session_id": leaf.session, "message": "hi"}, "not a child of this session"},
		{"send_message", map[string]any{"session_id": leaf.session, "message": " "}, "the message is empty"},
		{"task_stop", map[string]any{"session_id": leaf.session}, "not a child of this session"},
		{"task_output", map[string]any{"task_id": "task_nope", "block": true, "timeout_ms": -1}, "timeout_ms must be positive"},
	} {
		res := callTool(c.name, c.args)
		if !res.IsError || !strings.Contains(res.Content, c.want) {
			t.Errorf("%s %v: %+v, want an error with %q", c.name, c.args, res, c.want)
		}
	}
	// A cancelled child of this root: not messaged, not stopped again.
	gone := session.Session{ID: id.Descending(id.Session), ParentID: rec.ID, Depth: 1, AgentName: "leaf",
		Status: session.StatusAborted, StopReason: event.StopAborted}
	if err := h.store.CreateSession(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if res := callTool("send_message", map[string]any{"session_id": gone.ID, "message": "hi"}); !res.IsError || !strings.Contains(res.Content, "the child was cancelled") {
		t.Errorf("message to a cancelled child: %+v", res)
	}
	if res := callTool("task_stop", map[string]any{"session_id": gone.ID}); !res.IsError || !strings.Contains(res.Content, "is not running (aborted)") {
		t.Errorf("stop of an ended child: %+v", res)
	}
	if err := h.rt.Message(ctx, leaf.session, spawn.Sender{By: "opencode"}, "hi"); !errors.Is(err, spawn.ErrNotRunning) {
		t.Errorf("Message to an ended session: %v", err)
	}
}

// Issue 35's scene: a parallel team of three at work; one member is
// cancelled by the user, another is messaged by the user mid-run and
// answers the message at its next turn, the third completes; the lead
// reads all three outcomes.
func TestTeamMemberCancelledAndMessaged(t *testing.T) {
	h := newHarness(t, spawn.Limits{})
	ready := make(chan started, 3)
	release := make(chan struct{})
	h.agent("a", newFnModel(func(ctx context.Context, turn int, req *model.Request) reply {
		if turn == 0 {
			ready <- started{"a", spawn.InvocationFrom(ctx).Session.ID}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return reply{text: "a first"}
		}
		return reply{text: "a got: " + req.Messages[len(req.Messages)-1].Text()}
	}))
	h.agent("b", blockedModel(ready, "b"))
	h.agent("c", gatedModel(ready, "c", release, "c finished"))
	tm, err := team.New(team.Config{Name: "panel", Mode: team.Parallel, Members: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	h.add(tm)
	h.agent("lead", delegating(call{name: "task", args: map[string]any{"agent_or_team": "panel", "prompt": "review"}}))
	r := h.start(context.Background(), "lead", "go")
	sids := map[string]string{}
	for range 3 {
		s := <-ready
		sids[s.name] = s.session
	}
	if err := h.rt.Message(context.Background(), sids["a"], spawn.Sender{By: "opencode"}, "hurry up"); err != nil {
		t.Fatal(err)
	}
	h.cancel(sids["b"])
	close(release)
	out := r.wait(t)
	es := byName(out.root, out.evs)
	if es["a"].StopReason != event.StopCompleted || es["b"].StopReason != event.StopAborted || es["c"].StopReason != event.StopCompleted {
		t.Fatalf("a %s, b %s, c %s", es["a"].StopReason, es["b"].StopReason, es["c"].StopReason)
	}
	if out.res.StopReason != event.StopCompleted || !contains(out.res.Output,
		"[a]", "a got: Message from the user (from opencode):", "hurry up", "[b] cancelled", cancelledWords, "[c]", "c finished") {
		t.Errorf("lead saw %q", out.res.Output)
	}
}
