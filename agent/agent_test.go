package agent_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type recorder struct {
	mu  sync.Mutex
	evs []event.Event
}

func (r *recorder) Emit(e event.Event) { r.mu.Lock(); r.evs = append(r.evs, e); r.mu.Unlock() }

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.evs {
		out = append(out, string(e.Kind()))
	}
	return out
}

// runAgent runs a in a fresh root session and returns the result and events.
func runAgent(t *testing.T, ctx context.Context, a *agent.Agent, prompt string) (spawn.Result, *recorder, session.Store) {
	t.Helper()
	return runAgentWith(t, ctx, a, prompt, nil)
}

// runAgentWith is runAgent with set, when not nil, called on the root
// invocation before the run.
func runAgentWith(t *testing.T, ctx context.Context, a *agent.Agent, prompt string, set func(*spawn.Invocation)) (spawn.Result, *recorder, session.Store) {
	t.Helper()
	st := memory.New()
	rt := spawn.NewRuntime(spawn.Config{Store: st})
	s := session.Session{ID: "ses_root", AgentName: a.Name(), Status: session.StatusRunning}
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	inv, err := rt.NewRoot(s, "run_1", prompt, nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(inv)
	}
	res := a.Run(ctx, inv)
	rt.Release(inv)
	return res, rec, st
}

func scripted(t *testing.T, turns ...testmodel.Turn) model.Model {
	t.Helper()
	m, err := testmodel.New(testmodel.Config{Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type echoArgs struct {
	Text string `json:"text"`
}

func TestLoopRunsToolsAndFinishes(t *testing.T) {
	echo := tool.New("echo", "echo", func(_ context.Context, _ tool.Call, a echoArgs) (tool.Result, error) {
		return tool.Result{Content: "echo:" + a.Text}, nil
	})
	broken := tool.New("broken", "fails", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		return tool.Result{}, errors.New("disk on fire")
	})
	a, err := agent.New(agent.Config{Name: "a", Model: scripted(t,
		testmodel.Turn{Text: "calling", ToolCalls: []testmodel.ToolCall{{Name: "echo", Args: map[string]any{"text": "x"}}, {Name: "broken"}, {Name: "missing"}}},
		testmodel.Turn{Text: "all done"},
	), Tools: []tool.Tool{echo, broken}})
	if err != nil {
		t.Fatal(err)
	}
	res, rec, st := runAgent(t, context.Background(), a, "go")
	if res.StopReason != event.StopCompleted || res.Output != "all done" {
		t.Fatalf("result %+v", res)
	}
	if res.Usage.InputTokens == 0 || res.Usage.OutputTokens == 0 {
		t.Fatalf("usage not accumulated: %+v", res.Usage)
	}
	kinds := rec.kinds()
	if kinds[0] != "run_started" || kinds[len(kinds)-1] != "stream_complete" {
		t.Fatalf("kinds %v", kinds)
	}
	results := map[string]event.ToolCallComplete{}
	for _, e := range rec.evs {
		if c, ok := e.(event.ToolCallComplete); ok {
			results[c.ToolName] = c
		}
	}
	if r := results["echo"]; r.IsError || r.ToolResult != "echo:x" {
		t.Errorf("echo %+v", r)
	}
	if r := results["broken"]; !r.IsError || !strings.Contains(r.ToolResult, "disk on fire") {
		t.Errorf("broken %+v", r)
	}
	if r := results["missing"]; !r.IsError || !strings.Contains(r.ToolResult, "unknown tool") || !strings.Contains(r.ToolResult, "echo") {
		t.Errorf("missing %+v", r)
	}
	msgs, _ := st.Messages(context.Background(), "ses_root")
	if len(msgs) != 4 { // prompt, assistant with calls, tool results, final
		t.Fatalf("stored %d messages", len(msgs))
	}
	if msgs[2].Role != model.RoleTool || len(msgs[2].Parts) != 3 {
		t.Fatalf("tool results message %+v", msgs[2])
	}
}

func TestToolsRunConcurrently(t *testing.T) {
	// Each call waits for the other: only concurrent execution finishes.
	var wg sync.WaitGroup
	wg.Add(2)
	barrier := tool.New("barrier", "", func(ctx context.Context, _ tool.Call, _ struct{}) (tool.Result, error) {
		wg.Done()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
			return tool.Result{Content: "met"}, nil
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
	})
	a, _ := agent.New(agent.Config{Name: "a", Model: scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "barrier"}, {Name: "barrier"}}},
		testmodel.Turn{Text: "ok"},
	), Tools: []tool.Tool{barrier}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, _, _ := runAgent(t, ctx, a, "go")
	if res.StopReason != event.StopCompleted {
		t.Fatalf("tools did not run concurrently: %+v", res)
	}
}

func TestMaxTurns(t *testing.T) {
	loop := tool.New("again", "", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		return tool.Result{Content: "more"}, nil
	})
	m := scripted(t,
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "again"}}},
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "again"}}},
		testmodel.Turn{ToolCalls: []testmodel.ToolCall{{Name: "again"}}},
		testmodel.Turn{Text: "never"},
	)
	a, _ := agent.New(agent.Config{Name: "a", Model: m, Tools: []tool.Tool{loop}, MaxTurns: 2})
	res, rec, _ := runAgent(t, context.Background(), a, "go")
	if res.StopReason != event.StopError || !errors.Is(res.Err, agent.ErrMaxTurns) {
		t.Fatalf("result %+v", res)
	}
	if k := rec.kinds(); k[len(k)-1] != "run_error" {
		t.Fatalf("last event %s", k[len(k)-1])
	}
}

func TestModelErrorEndsRun(t *testing.T) {
	a, _ := agent.New(agent.Config{Name: "a", Model: scripted(t, testmodel.Turn{Text: "half", Error: "503 upstream"})})
	res, rec, _ := runAgent(t, context.Background(), a, "go")
	if res.StopReason != event.StopError || !strings.Contains(res.Err.Error(), "503 upstream") {
		t.Fatalf("result %+v", res)
	}
	last := rec.evs[len(rec.evs)-1].(event.RunError)
	if last.Code != "model_error" || last.AgentName != "a" {
		t.Fatalf("run_error %+v", last)
	}
}

func TestCancellationStopsPromptly(t *testing.T) {
	slow := tool.New("slow", "", func(ctx context.Context, _ tool.Call, _ struct{}) (tool.Result, error) {
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
	a, _ := agent.New(agent.Config{Name: "a", Model: scripted(t,
		testmodel.Turn{Text: "working on it", ToolCalls: []testmodel.ToolCall{{Name: "slow"}}},
		testmodel.Turn{Text: "never"},
	), Tools: []tool.Tool{slow}})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	res, rec, _ := runAgent(t, ctx, a, "go")
	if res.StopReason != event.StopAborted {
		t.Fatalf("result %+v", res)
	}
	last := rec.evs[len(rec.evs)-1].(event.RunError)
	if last.Code != "aborted" {
		t.Fatalf("last %+v", last)
	}
}

func TestConcurrentRunsShareNoState(t *testing.T) {
	a, _ := agent.New(agent.Config{Name: "a", Model: scripted(t, testmodel.Turn{Text: "same answer"})})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			res, _, _ := runAgent(t, context.Background(), a, "go")
			if res.Output != "same answer" || len(res.Messages) != 2 {
				t.Errorf("result %+v", res)
			}
		})
	}
	wg.Wait()
}

func TestNewValidates(t *testing.T) {
	if _, err := agent.New(agent.Config{Name: "a"}); err == nil {
		t.Fatal("no model accepted")
	}
	echo := tool.New("echo", "", func(context.Context, tool.Call, struct{}) (tool.Result, error) { return tool.Result{}, nil })
	if _, err := agent.New(agent.Config{Name: "a", Model: scripted(t, testmodel.Turn{}), Tools: []tool.Tool{echo, echo}}); err == nil {
		t.Fatal("duplicate tool accepted")
	}
}

// stubborn is a model whose stream goes on yielding after it was told to
// stop: an error, then more text.
type stubborn struct{}

func (stubborn) ID() string { return "stubborn" }

func (stubborn) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		yield(model.Chunk{Kind: model.ChunkText, Text: "before "}, nil)
		yield(model.Chunk{}, errors.New("stream broke"))
		yield(model.Chunk{Kind: model.ChunkText, Text: "after"}, nil)
	}
}

// A stream that ignores the end it was asked for changes nothing after it:
// the run ends with the stream's error and no text of later chunks.
func TestStreamIgnoringStopIsCutOff(t *testing.T) {
	a, _ := agent.New(agent.Config{Name: "a", Model: stubborn{}})
	res, rec, _ := runAgent(t, context.Background(), a, "go")
	if res.StopReason != event.StopError || !strings.Contains(res.Err.Error(), "stream broke") {
		t.Fatalf("result %+v", res)
	}
	for _, e := range rec.evs {
		if d, ok := e.(event.PartDelta); ok && strings.Contains(d.Delta.ContentDelta, "after") {
			t.Fatalf("a chunk after the stream's error was used: %+v", d)
		}
	}
}
