package acpagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/external/acpagent"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

// testPool builds a pool of nodes with hooks whose approval flow is a
// real broker; answer (nil: nobody attached) answers each request.
func testPool(t *testing.T, answer func(approval.Request) approval.Reply, nodes ...spawn.Node) (*pool.Pool, *approvals) {
	t.Helper()
	return testPoolWithHooks(t, hook.New(hook.Options{}), answer, nodes...)
}

// testPoolWithHooks is testPool with the hooks reg (listeners of its own
// added by the test).
func testPoolWithHooks(t *testing.T, reg *hook.Registry, answer func(approval.Request) approval.Reply, nodes ...spawn.Node) (*pool.Pool, *approvals) {
	t.Helper()
	return testPoolConfig(t, reg, answer, pool.Config{Nodes: nodes})
}

// testPoolConfig is testPoolWithHooks with the pool of cfg.
func testPoolConfig(t *testing.T, reg *hook.Registry, answer func(approval.Request) approval.Reply, cfg pool.Config) (*pool.Pool, *approvals) {
	t.Helper()
	broker, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg.UseBroker(broker)
	seen := &approvals{}
	if answer != nil {
		detach := broker.Attach("test", func(n approval.Notice) {
			if n.Kind != approval.Asked {
				return
			}
			seen.add(n.Request)
			if err := broker.Reply(n.Request.ID, answer(n.Request), "", "test"); err != nil {
				t.Error(err)
			}
		})
		t.Cleanup(detach)
	}
	p, err := pool.Build(cfg, pool.Options{Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, seen
}

// approvals are the requests the broker's front end saw.
type approvals struct {
	mu   sync.Mutex
	reqs []approval.Request
}

func (a *approvals) add(r approval.Request) { a.mu.Lock(); a.reqs = append(a.reqs, r); a.mu.Unlock() }
func (a *approvals) all() []approval.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]approval.Request(nil), a.reqs...)
}

func newNode(t *testing.T, cfg acpagent.Config) *acpagent.Node {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	n, err := acpagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// run runs node as the root and returns its result and stream, checked
// against the stream invariants.
func run(t *testing.T, ctx context.Context, p *pool.Pool, node, prompt string, sink func(event.Event)) (pool.RunResult, []event.Event) {
	t.Helper()
	collect, events := eventtest.Collect()
	res, err := p.RunSink(ctx, pool.RunRequest{Node: node, Prompt: prompt}, event.SinkFunc(func(e event.Event) {
		collect.Emit(e)
		if sink != nil {
			sink(e)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	evs := events()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Errorf("stream: %v", err)
	}
	return res, evs
}

// The SDK's example agent as the root: its message chunks stream as one
// text part per message, its tool calls start and complete, its
// permission request reaches the approval broker labelled with the
// member, and an allow lets it finish; the final message is its text
// after its last tool call. A call's end names the files the agent named
// last (the example agent names them when it announces a call, not when
// the call ends), and the turn ends with the pool's finish
// reason (stop), not ACP's (end_turn).
func TestExampleAgentAnswersThroughTheApprovalFlow(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	node := newNode(t, acpagent.Config{Name: "example", Description: "the SDK's example agent", Command: exampleAgent})
	p, seen := testPool(t, func(approval.Request) approval.Reply { return approval.AllowOnce }, node)
	res, evs := run(t, context.Background(), p, "example", "improve the project", nil)
	if res.Result.StopReason != event.StopCompleted || res.Result.Err != nil {
		t.Fatalf("result %+v", res.Result)
	}
	if want := "Perfect! I've successfully updated the configuration. The changes have been applied."; res.Result.Output != want {
		t.Errorf("output %q, want %q", res.Result.Output, want)
	}
	var text strings.Builder
	var starts, completes []string
	finish := ""
	for _, e := range evs {
		switch v := e.(type) {
		case event.PartDelta:
			if v.Delta.PartDeltaKind == event.PartText {
				text.WriteString(v.Delta.ContentDelta)
			}
		case event.ToolCallStart:
			starts = append(starts, v.ToolCallID+" "+v.ToolKind+" "+v.Title)
		case event.ToolCallComplete:
			files := ""
			for _, l := range v.Locations {
				files += " " + l.Path
			}
			completes = append(completes, v.ToolCallID+files)
			if v.IsError || v.AgentName != "example" {
				t.Errorf("tool call %+v", v)
			}
		case event.StreamComplete:
			finish = v.Message.FinishReason
		}
	}
	if !strings.HasPrefix(text.String(), "ACP Go Example Agent") || !strings.Contains(text.String(), "Perfect!") {
		t.Errorf("streamed text %q", text.String())
	}
	if want := []string{"call_1 read Reading project files", "call_2 edit Modifying critical configuration file"}; strings.Join(starts, "|") != strings.Join(want, "|") {
		t.Errorf("tool_call_start %q, want %q", starts, want)
	}
	if want := "call_1 /project/README.md,call_2 /project/config.json"; strings.Join(completes, ",") != want {
		t.Errorf("tool_call_complete %q, want %q", completes, want)
	}
	if finish != "stop" {
		t.Errorf("stream_complete finish reason %q, want stop", finish)
	}
	reqs := seen.all()
	if len(reqs) != 1 || reqs[0].Agent != "example" || reqs[0].SessionID != res.SessionID || reqs[0].Tool != "edit" || reqs[0].CallID != "call_2" ||
		!strings.Contains(reqs[0].Rule, "example asks permission: Modifying critical configuration file") {
		t.Errorf("approval requests %+v", reqs)
	}
}

// A rejection reaches the agent as its reject option: it skips the change
// and says so.
func TestExampleAgentRejected(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	node := newNode(t, acpagent.Config{Name: "example", Command: exampleAgent})
	p, _ := testPool(t, func(approval.Request) approval.Reply { return approval.RejectOnce }, node)
	res, _ := run(t, context.Background(), p, "example", "improve the project", nil)
	if res.Result.StopReason != event.StopCompleted || !strings.Contains(res.Result.Output, "skip the configuration update") {
		t.Fatalf("result %+v", res.Result)
	}
}

// With nobody attached to the broker, the request is refused (the agent's
// reject option); with requires_tool_confirmation: never, it is granted
// without asking anyone.
func TestExampleAgentUnattendedAndNever(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	refused := newNode(t, acpagent.Config{Name: "refused", Command: exampleAgent})
	granted := newNode(t, acpagent.Config{Name: "granted", Command: exampleAgent, Confirm: acpagent.ConfirmNever})
	p, _ := testPool(t, nil, refused, granted)
	res, _ := run(t, context.Background(), p, "refused", "go", nil)
	if !strings.Contains(res.Result.Output, "skip the configuration update") {
		t.Errorf("unattended: output %q", res.Result.Output)
	}
	res, _ = run(t, context.Background(), p, "granted", "go", nil)
	if !strings.Contains(res.Result.Output, "Perfect!") {
		t.Errorf("never: output %q", res.Result.Output)
	}
}

// Cancelling the run mid-turn sends session/cancel: the agent answers
// cancelled, the session ends aborted with its unfinished tool call
// completed as failed, and the agent process ends with the run (goleak:
// the goroutines that read it are gone).
func TestExampleAgentCancelledMidRun(t *testing.T) {
	node := newNode(t, acpagent.Config{Name: "example", Command: exampleAgent})
	p, _ := testPool(t, nil, node)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, evs := run(t, ctx, p, "example", "go", func(e event.Event) {
		if s, ok := e.(event.ToolCallStart); ok && s.ToolCallID == "call_1" {
			cancel()
		}
	})
	if res.Result.StopReason != event.StopAborted {
		t.Fatalf("result %+v", res.Result)
	}
	var failed bool
	for _, e := range evs {
		if c, ok := e.(event.ToolCallComplete); ok && c.ToolCallID == "call_1" {
			failed = c.IsError && strings.Contains(c.ToolResult, "cancelled")
		}
	}
	if !failed {
		t.Error("the unfinished call_1 was not completed as failed")
	}
	if last, ok := evs[len(evs)-1].(event.RunError); !ok || last.Code != "aborted" {
		t.Errorf("last event %#v", evs[len(evs)-1])
	}
}

// An agent that crashes before it answers fails its delegation with the
// tail of its stderr; the parent goes on and completes.
func TestCrashingAgentFailsItsChildOnly(t *testing.T) {
	crash := newNode(t, acpagent.Config{Name: "crash", Command: "sh", Args: []string{"-c", "echo 'fatal: no API key configured' >&2; exit 3"}})
	parent := parentNode{name: "parent", child: crash, times: 1}
	p, _ := testPool(t, nil, crash, parent)
	res, evs := run(t, context.Background(), p, "parent", "go", nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("parent %+v", res.Result)
	}
	var end event.SpawnSessionEnd
	for _, e := range evs {
		if v, ok := e.(event.SpawnSessionEnd); ok {
			end = v
		}
	}
	if end.StopReason != event.StopError || !strings.Contains(end.Error, "fatal: no API key configured") || !strings.Contains(end.Error, "exit status 3") {
		t.Errorf("child end %+v", end)
	}
}

// One agent process serves every delegation to the member in a root run,
// each in a session of its own; the next run starts another.
func TestOneProcessPerMemberPerRun(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	node := newNode(t, acpagent.Config{
		Name: "example", Command: "sh", Args: []string{"-c", `echo started >> "$STARTS"; exec "$AGENT"`},
		Env: map[string]string{"STARTS": starts, "AGENT": exampleAgent}, Confirm: acpagent.ConfirmNever,
	})
	parent := parentNode{name: "parent", child: node, times: 2}
	p, _ := testPool(t, nil, node, parent)
	for i := 1; i <= 2; i++ {
		res, evs := run(t, context.Background(), p, "parent", "go", nil)
		if res.Result.StopReason != event.StopCompleted {
			t.Fatalf("run %d: %+v", i, res.Result)
		}
		children := 0
		for _, e := range evs {
			if v, ok := e.(event.SpawnSessionEnd); ok && v.StopReason == event.StopCompleted && strings.Contains(v.LastAssistantMessage, "Perfect!") {
				children++
			}
		}
		if children != 2 {
			t.Errorf("run %d: %d children completed, want 2", i, children)
		}
		b, err := os.ReadFile(starts)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "started"); n != i {
			t.Errorf("after run %d: %d agent processes started, want %d", i, n, i)
		}
	}
}

// parentNode delegates its prompt to child, times times, one after the
// other, and completes whatever the children did.
type parentNode struct {
	name  string
	child spawn.Node
	times int
}

func (n parentNode) Name() string                 { return n.name }
func (n parentNode) Description() string          { return "" }
func (n parentNode) SourceType() event.SourceType { return event.SourceAgent }
func (n parentNode) ModelID() string              { return "" }
func (n parentNode) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: n.name, ParentSessionID: inv.Session.ParentID})
	for range n.times {
		if _, err := spawn.Spawn(ctx, inv, spawn.Request{Node: n.child, Prompt: inv.Prompt, Mechanism: event.MechanismManual}); err != nil {
			inv.Sink.Emit(event.RunError{Message: err.Error(), RunID: inv.RunID, AgentName: n.name})
			return spawn.Result{StopReason: event.StopError, Err: err}
		}
	}
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done"}})
	return spawn.Result{Output: "done"}
}
