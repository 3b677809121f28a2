package hook_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A listener that panics, fails or hangs is logged and skipped; later
// listeners run and so does the run.
func TestEmitContainment(t *testing.T) {
	var logs syncBuffer
	reg := hook.New(hook.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var mu sync.Mutex
	var calls []string
	note := func(s string) {
		mu.Lock()
		calls = append(calls, s)
		mu.Unlock()
	}
	reg.OnSubagentStart.Register(func(context.Context, hook.SubagentStart) error {
		note("panicker")
		panic("listener exploded")
	}, hook.WithName("panicker"))
	reg.OnSubagentStart.Register(func(context.Context, hook.SubagentStart) error {
		note("failer")
		return errors.New("listener failed")
	}, hook.WithName("failer"))
	// The hanger outlives its deadline until the run has completed: the
	// run did not wait for it. Close then waits for it (nothing leaks).
	runDone := make(chan struct{})
	reg.OnSubagentStart.Register(func(ctx context.Context, _ hook.SubagentStart) error {
		note("hanger")
		<-ctx.Done()
		<-runDone
		return nil
	}, hook.WithName("hanger"), hook.WithTimeout(30*time.Millisecond))
	reg.OnSubagentStart.Register(func(context.Context, hook.SubagentStart) error {
		note("last")
		return nil
	})
	reg.OnSubagentEnd.Register(func(context.Context, hook.SubagentEnd) error {
		note("end")
		panic("end listener exploded")
	})
	h := newHarness(t, reg, spawn.Limits{})
	h.agent("child", scripted(t, text("child done")))
	h.agent("parent", scripted(t, callTurn("task", map[string]any{"agent_or_team": "child", "prompt": "x"}), text("parent done")), spawn.SubagentTools()...)
	res, _, _ := h.run(context.Background(), "parent", "go")
	close(runDone)
	if res.StopReason != event.StopCompleted || res.Output != "parent done" {
		t.Fatalf("run ended %s (%q): %v", res.StopReason, res.Output, res.Err)
	}
	if err := reg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := strings.Join(calls, ",")
	mu.Unlock()
	if got != "panicker,failer,hanger,last,end" {
		t.Errorf("listeners called: %s", got)
	}
	for _, want := range []string{"listener exploded", "listener failed", "timed out", "end listener exploded"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// A standalone emit point calls its listeners in order, each with its own
// copy of the payload, and skips a failing one.
func TestStandaloneEmit(t *testing.T) {
	e := hook.NewEmit[[]string]("test/emit", nil, func(p []string) []string { return append([]string(nil), p...) }, nil)
	if e.Name() != "test/emit" {
		t.Errorf("name %q", e.Name())
	}
	var got []string
	e.Register(func(_ context.Context, p []string) error {
		p[0] = "changed by a listener"
		return errors.New("listener failed")
	})
	remove := e.Register(func(_ context.Context, p []string) error {
		got = append(got, p[0])
		return nil
	})
	payload := []string{"original"}
	e.Fire(context.Background(), payload)
	remove()
	e.Fire(context.Background(), payload)
	if len(got) != 1 || got[0] != "original" || payload[0] != "original" || e.Len() != 1 {
		t.Errorf("got %v, payload %v, %d listeners", got, payload, e.Len())
	}
}

// Seams are waterfalls: order, next, changed results, veto, and a panicking
// listener skipped.
func TestSeamChain(t *testing.T) {
	s := hook.NewSeam[string, string]("test/seam", nil, nil, nil)
	var order []string
	s.Use(func(ctx context.Context, in string, next hook.Next[string, string]) string {
		order = append(order, "a")
		return next(ctx, in+">a") + "<a"
	})
	s.Use(func(ctx context.Context, in string, next hook.Next[string, string]) string {
		order = append(order, "b")
		panic("b exploded")
	})
	remove := s.Use(func(ctx context.Context, in string, next hook.Next[string, string]) string {
		order = append(order, "c")
		if in == "veto>a" {
			return "vetoed"
		}
		return next(ctx, in)
	})
	final := func(_ context.Context, in string) string { return "final(" + in + ")" }
	if got := s.Run(context.Background(), "x", final); got != "final(x>a)<a" {
		t.Errorf("Run = %q", got)
	}
	if got := s.Run(context.Background(), "veto", final); got != "vetoed<a" {
		t.Errorf("veto: Run = %q", got)
	}
	remove()
	if got := s.Run(context.Background(), "veto", final); got != "final(veto>a)<a" {
		t.Errorf("after remove: Run = %q", got)
	}
	if strings.Join(order, "") != "abcabcab" {
		t.Errorf("order %v", order)
	}
}

// A per-agent listener fires for that agent's runs and the delegations it
// starts, not for others.
func TestForAgentScope(t *testing.T) {
	reg := hook.New(hook.Options{})
	var mu sync.Mutex
	var seen []string
	add := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	reg.OnPreExecute.Use(func(ctx context.Context, c hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
		add("pre:" + c.Agent + ":" + c.ToolName)
		return next(ctx, c)
	}, hook.ForAgent("parent"))
	reg.OnSubagentStart.Register(func(_ context.Context, s hook.SubagentStart) error {
		add("start:" + s.Name)
		return nil
	}, hook.ForAgent("parent"))
	reg.OnSubagentEnd.Register(func(_ context.Context, e hook.SubagentEnd) error {
		add("end:" + e.Name)
		return nil
	}, hook.ForAgent("parent"))
	reg.OnTurnStop.Use(func(ctx context.Context, s hook.TurnStop, next hook.Next[hook.TurnStop, hook.StopDecision]) hook.StopDecision {
		add("stop:" + s.Agent)
		return next(ctx, s)
	}, hook.ForAgent("child"))
	h := newHarness(t, reg, spawn.Limits{})
	p := &probe{name: "probe"}
	h.agent("grandchild", scripted(t, text("gc")))
	h.agent("child", scripted(t,
		callTurn("task", map[string]any{"agent_or_team": "grandchild", "prompt": "y"}),
		callTurn("probe", nil), text("child done")), append(spawn.SubagentTools(), p)...)
	h.agent("parent", scripted(t, callTurn("task", map[string]any{"agent_or_team": "child", "prompt": "x"}), text("done")), spawn.SubagentTools()...)
	h.run(context.Background(), "parent", "go")
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(seen, ","); got != "pre:parent:task,start:child,stop:child,end:child" {
		t.Errorf("scoped listeners saw %s", got)
	}
}

// tools/pre-execute: the input is a frozen copy; deny reaches the model;
// UpdatedInput replaces the arguments; the manifest policy is the default;
// ask goes to approval/request, which fails closed.
func TestPreExecuteAndApproval(t *testing.T) {
	newRun := func(t *testing.T, reg *hook.Registry) (*harness, *probe, *recModel) {
		h := newHarness(t, reg, spawn.Limits{})
		p := &probe{name: "probe"}
		m := scripted(t, callTurn("probe", map[string]any{"n": 1}), callTurn("probe", map[string]any{"n": 2}), text("done"))
		h.agent("main", m, p)
		return h, p, m
	}
	lastResult := func(t *testing.T, h *harness, sid string) string {
		rs := toolResults(h.messages(sid))
		if len(rs) == 0 {
			t.Fatal("no tool result")
		}
		return rs[len(rs)-1].Text
	}

	t.Run("frozen input and updated input", func(t *testing.T) {
		reg := hook.New(hook.Options{})
		reg.OnPreExecute.Use(func(ctx context.Context, c hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
			second := strings.Contains(string(c.Input), "2")
			for i := range c.Input {
				c.Input[i] = ' ' // scribbling on the copy changes nothing
			}
			d := next(ctx, c)
			if second {
				d.UpdatedInput = []byte(`{"n":42}`)
			}
			return d
		})
		h, p, _ := newRun(t, reg)
		h.run(context.Background(), "main", "go")
		if got := strings.Join(p.ran(), " "); got != `{"n":1} {"n":42}` {
			t.Errorf("probe ran with %s", got)
		}
	})

	t.Run("deny reaches the model", func(t *testing.T) {
		reg := hook.New(hook.Options{})
		reg.OnPreExecute.Use(func(ctx context.Context, c hook.ToolCall, next hook.Next[hook.ToolCall, agent.ToolDecision]) agent.ToolDecision {
			return agent.ToolDecision{Action: agent.ToolDeny, Reason: "probes are off today"}
		})
		h, p, m := newRun(t, reg)
		_, sid, _ := h.run(context.Background(), "main", "go")
		if len(p.ran()) != 0 {
			t.Error("denied tool ran")
		}
		if got := lastResult(t, h, sid); !strings.Contains(got, "probes are off today") {
			t.Errorf("tool result %q", got)
		}
		if reqs := m.requests(); !strings.Contains(texts(reqs[1]), "probes are off today") {
			t.Error("the model did not see the reason")
		}
	})

	t.Run("manifest policy and fail-closed approval", func(t *testing.T) {
		reg := hook.New(hook.Options{})
		reg.Approvals.Set("main", map[string]string{"*": "deny", "pro*": "ask"})
		h, p, _ := newRun(t, reg)
		_, sid, _ := h.run(context.Background(), "main", "go")
		if len(p.ran()) != 0 {
			t.Error("tool ran without approval")
		}
		if got := lastResult(t, h, sid); !strings.Contains(got, "approval unavailable") {
			t.Errorf("tool result %q", got)
		}
	})

	t.Run("approval outcomes", func(t *testing.T) {
		for _, tc := range []struct {
			outcome string
			asks    int
			ran     int
		}{
			{hook.AllowedOnce, 2, 2},
			{hook.AllowedAlways, 1, 2},
			{hook.Rejected, 2, 0},
			{hook.Cancelled, 2, 0},
			{"", 2, 0},
			{"maybe", 2, 0},
		} {
			reg := hook.New(hook.Options{})
			reg.Approvals.Set("main", map[string]string{"probe": "ask"})
			asks := 0
			reg.OnApproval.Use(func(_ context.Context, r hook.ApprovalRequest, _ hook.Next[hook.ApprovalRequest, hook.ApprovalDecision]) hook.ApprovalDecision {
				asks++
				if r.ToolName != "probe" || r.Agent != "main" || r.CallID == "" || !strings.Contains(r.Reason, "tool_approval") {
					t.Errorf("approval request %+v", r)
				}
				return hook.ApprovalDecision{Outcome: tc.outcome}
			})
			h, p, _ := newRun(t, reg)
			h.run(context.Background(), "main", "go")
			if asks != tc.asks || len(p.ran()) != tc.ran {
				t.Errorf("%q: asked %d times, ran %d times; want %d, %d", tc.outcome, asks, len(p.ran()), tc.asks, tc.ran)
			}
		}
	})

	t.Run("policy from the manifest", func(t *testing.T) {
		m, err := config.Parse("agentpool.yaml", []byte("agents:\n  main:\n    model: test\n    tool_approval: {probe: deny}\n"))
		if err != nil {
			t.Fatal(err)
		}
		reg := hook.New(hook.Options{})
		reg.Approvals.ApplyManifest(m)
		if got := reg.Approvals.Decide("main", "probe"); got != "deny" {
			t.Errorf("policy %q", got)
		}
		if got := reg.Approvals.Decide("main", "other"); got != "allow" {
			t.Errorf("policy %q", got)
		}
	})
}

// tools/post-execute adds feedback and context; tools/result gets copies.
func TestPostExecuteAndToolResult(t *testing.T) {
	reg := hook.New(hook.Options{})
	reg.OnPostExecute.Use(func(ctx context.Context, o hook.ToolOutcome, next hook.Next[hook.ToolOutcome, hook.PostDecision]) hook.PostDecision {
		d := next(ctx, o)
		d.Block, d.Feedback, d.Context = true, "double-check that", "CONTEXT AFTER TOOL"
		return d
	})
	var results []hook.ToolOutcome
	reg.OnToolResult.Register(func(_ context.Context, o hook.ToolOutcome) error {
		results = append(results, o)
		o.Input[0] = 'X'
		return nil
	})
	h := newHarness(t, reg, spawn.Limits{})
	p := &probe{name: "probe"}
	m := scripted(t, callTurn("probe", map[string]any{"n": 1}), text("done"))
	h.agent("main", m, p)
	_, sid, evs := h.run(context.Background(), "main", "go")
	rs := toolResults(h.messages(sid))
	if len(rs) != 1 || !strings.Contains(rs[0].Text, "probe ran with") || !strings.Contains(rs[0].Text, "Hook feedback: double-check that") {
		t.Fatalf("tool results %+v", rs)
	}
	if len(results) != 1 || results[0].Result != rs[0].Text || results[0].ToolName != "probe" {
		t.Errorf("tools/result saw %+v", results)
	}
	for _, e := range evs {
		if c, ok := e.(event.ToolCallComplete); ok && string(c.ToolInput) != `{"n":1}` {
			t.Errorf("tool input changed to %s", c.ToolInput)
		}
	}
	if reqs := m.requests(); len(reqs) < 2 || !strings.Contains(texts(reqs[1]), "CONTEXT AFTER TOOL") {
		t.Error("post-execute context did not reach the next request")
	}
}

// agent/request: a listener may change the request; changing messages does
// not change the conversation; agent/prompt-submit blocks or adds context;
// agent/turn-stop continues with a reason.
func TestRequestPromptAndTurnStop(t *testing.T) {
	reg := hook.New(hook.Options{})
	reg.OnRequest.Use(func(ctx context.Context, r hook.ModelRequest, next hook.Next[hook.ModelRequest, *model.Request]) *model.Request {
		r.Request.System = "SYSTEM FROM HOOK"
		for i := range r.Request.Messages {
			for j := range r.Request.Messages[i].Parts {
				r.Request.Messages[i].Parts[j].Text += " (seen)"
			}
		}
		return next(ctx, r)
	})
	reg.OnPromptSubmit.Use(func(ctx context.Context, p hook.Prompt, next hook.Next[hook.Prompt, hook.PromptDecision]) hook.PromptDecision {
		if strings.Contains(p.Content, "forbidden") {
			return hook.PromptDecision{Block: true, Reason: "no forbidden prompts"}
		}
		d := next(ctx, p)
		d.Context = "PROMPT CONTEXT"
		return d
	})
	continued := 0
	reg.OnTurnStop.Use(func(ctx context.Context, s hook.TurnStop, next hook.Next[hook.TurnStop, hook.StopDecision]) hook.StopDecision {
		if s.IsSubagent() {
			t.Error("root run seen as a subagent")
		}
		if continued == 0 {
			continued++
			return hook.StopDecision{Continue: true, Reason: "please go on"}
		}
		return next(ctx, s)
	})
	h := newHarness(t, reg, spawn.Limits{})
	m := scripted(t, text("first"), text("second"))
	h.agent("main", m)
	res, sid, _ := h.run(context.Background(), "main", "hello")
	if res.Output != "second" {
		t.Errorf("output %q, want the turn after the continuation", res.Output)
	}
	reqs := m.requests()
	if len(reqs) != 2 || reqs[0].System != "SYSTEM FROM HOOK" || !strings.Contains(texts(reqs[0]), "PROMPT CONTEXT") || !strings.Contains(texts(reqs[1]), "please go on") {
		t.Errorf("requests: %+v", reqs)
	}
	for _, msg := range h.messages(sid) {
		if strings.Contains(msg.Text(), "(seen)") {
			t.Errorf("agent/request changed the stored conversation: %q", msg.Text())
		}
	}
	res, _, _ = h.run(context.Background(), "main", "a forbidden prompt")
	if res.StopReason != event.StopError || res.Err == nil || !strings.Contains(res.Err.Error(), "no forbidden prompts") {
		t.Errorf("blocked prompt: %s %v", res.StopReason, res.Err)
	}
}

// session/start and session/end fire from pool.RunSink; what session/start
// injects reaches the first request; leftovers are stored (rule 6 for a
// root session).
func TestSessionPointsThroughPool(t *testing.T) {
	m, err := config.Parse("agentpool.yaml", []byte("agents:\n  main:\n    model: {type: scripted, turns: [\"one\", \"two\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg := hook.New(hook.Options{})
	var mu sync.Mutex
	var log []string
	add := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	reg.OnSessionStart.Register(func(ctx context.Context, s hook.SessionStart) error {
		add("start:" + s.Source + ":" + s.Agent)
		return hook.Inject(ctx, s.SessionID, "SESSION START CONTEXT")
	})
	reg.OnSessionEnd.Register(func(_ context.Context, s hook.SessionEnd) error {
		add("end:" + string(s.Reason))
		return nil
	})
	reg.OnRequest.Use(func(ctx context.Context, r hook.ModelRequest, next hook.Next[hook.ModelRequest, *model.Request]) *model.Request {
		var b strings.Builder
		for _, msg := range r.Request.Messages {
			b.WriteString(msg.Text() + "|")
		}
		add("request:" + b.String())
		return next(ctx, r)
	})
	reg.OnTurnStop.Use(func(ctx context.Context, s hook.TurnStop, next hook.Next[hook.TurnStop, hook.StopDecision]) hook.StopDecision {
		if err := hook.Inject(ctx, s.SessionID, "LEFT OVER"); err != nil {
			t.Error(err)
		}
		return next(ctx, s)
	})
	p, err := pool.New(m, pool.Options{Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "hi"}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "again", SessionID: res.SessionID}, event.Discard); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := strings.Join(log, "\n")
	mu.Unlock()
	want := "start:startup:main\nrequest:hi|SESSION START CONTEXT|\nend:completed\nstart:resume:main\n"
	if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "end:completed") {
		t.Errorf("log:\n%s\nwant prefix:\n%s", got, want)
	}
	// The first run's leftover was stored, so the resumed run's history has it.
	if !strings.Contains(got, "LEFT OVER") {
		t.Errorf("the injection left at teardown was lost:\n%s", got)
	}
}

var _ tool.Tool = (*probe)(nil)
