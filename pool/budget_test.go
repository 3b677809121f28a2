package pool_test

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// spendModel reports 100 tokens (50 in, 50 out) per call. Delegating, its
// first turn asks task for a runaway child and its next answers with the
// tool result it read; else every turn calls the noop tool, for ever.
type spendModel struct{ delegate bool }

func (spendModel) ID() string { return "spend" }

func (m spendModel) Stream(_ context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		last := req.Messages[len(req.Messages)-1]
		var c model.Chunk
		switch {
		case m.delegate && last.Role == model.RoleTool:
			c = model.Chunk{Kind: model.ChunkText, Text: "the child said: " + last.Parts[0].Text}
		case m.delegate:
			c = model.Chunk{Kind: model.ChunkToolCall, ToolCallID: "call_task", ToolName: "task",
				ArgsDelta: `{"agent_or_team":"runaway","prompt":"go on for ever"}`}
		default:
			c = model.Chunk{Kind: model.ChunkToolCall, ToolName: "noop", ArgsDelta: `{}`}
		}
		if !yield(c, nil) {
			return
		}
		yield(model.Chunk{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 50, OutputTokens: 50}}, nil)
	}
}

// pricedSpend is a spendModel at $1 per million tokens, in and out.
type pricedSpend struct{ spendModel }

func (pricedSpend) Price() (float64, float64) { return 1, 1 }

// budgetPool has a boss that delegates to runaway, whose every turn calls
// a tool; runaway has budget b.
func budgetPool(t *testing.T, b spawn.Budget, priced bool) (*pool.Pool, *int) {
	t.Helper()
	noops := new(int)
	noop := tool.New("noop", "does nothing", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		*noops++ // runaway's calls run one at a time
		return tool.Result{Content: "nothing done"}, nil
	})
	var boss, runaway model.Model = spendModel{delegate: true}, spendModel{}
	if priced {
		boss, runaway = pricedSpend{spendModel{delegate: true}}, pricedSpend{}
	}
	p, err := pool.Build(pool.Config{Agents: []pool.AgentSpec{
		{Name: "boss", Model: boss, Builtin: []string{config.ToolsetSubagent}},
		{Name: "runaway", Model: runaway, Tools: []tool.Tool{noop}, MaxTurns: 100, Budget: b},
	}}, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, noops
}

// runBudget runs the boss and returns its result, the runaway child's end
// and the events.
func runBudget(t *testing.T, p *pool.Pool, b spawn.Budget) (pool.RunResult, event.SpawnSessionEnd, []event.Event) {
	t.Helper()
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: "boss", Prompt: "start", Budget: b}, sink)
	if err != nil {
		t.Fatal(err)
	}
	evs := events()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Fatal(err)
	}
	var end event.SpawnSessionEnd
	for _, e := range evs {
		if v, ok := e.(event.SpawnSessionEnd); ok {
			end = v
		}
	}
	return res, end, evs
}

// TestBudgetStopsRunawaySubtree: a child that keeps calling tools is
// stopped by its agent's budget of tokens: 100 per call, a budget of 250,
// so its fourth call does not start. It ends with stop reason budget and
// the message naming budget and spend; its parent reads that in its tool
// result and completes.
func TestBudgetStopsRunawaySubtree(t *testing.T) {
	p, noops := budgetPool(t, spawn.Budget{Tokens: 250}, false)
	res, end, _ := runBudget(t, p, spawn.Budget{})
	const msg = "budget of 250 tokens for agent runaway reached: 300 used"
	if end.StopReason != event.StopBudget || end.Error != msg {
		t.Fatalf("child ended %s %q, want budget %q", end.StopReason, end.Error, msg)
	}
	if *noops != 3 {
		t.Errorf("runaway ran %d tool calls, want 3 (its calls after the budget must not start)", *noops)
	}
	if end.Usage == nil || end.Usage.InputTokens+end.Usage.OutputTokens != 300 {
		t.Errorf("child usage %+v, want 300 tokens", end.Usage)
	}
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("boss ended %s (%v), want completed", res.Result.StopReason, res.Result.Err)
	}
	var told map[string]string
	out := strings.TrimPrefix(res.Result.Output, "the child said: ")
	if err := json.Unmarshal([]byte(out), &told); err != nil {
		t.Fatalf("boss's answer %q: %v", res.Result.Output, err)
	}
	if told["stop_reason"] != "budget" || told["error"] != msg {
		t.Errorf("parent's tool result %v: want stop_reason budget and %q", told, msg)
	}
	if tot := res.TotalUsage.InputTokens + res.TotalUsage.OutputTokens; tot != 500 {
		t.Errorf("run's total %d tokens, want 500 (boss 2 calls, runaway 3)", tot)
	}
	s, err := p.Store().GetSession(context.Background(), end.ChildSessionID)
	if err != nil {
		t.Fatal(err)
	}
	if s.StopReason != event.StopBudget || s.Metadata["error"] != msg {
		t.Errorf("stored child: stop %s, error %v", s.StopReason, s.Metadata["error"])
	}
}

// TestBudgetStopsRun: a run's budget stops every session of the run:
// the child at its refused call, then the root at its next one, and the
// run ends with stop reason budget.
func TestBudgetStopsRun(t *testing.T) {
	p, noops := budgetPool(t, spawn.Budget{}, false)
	res, end, _ := runBudget(t, p, spawn.Budget{Tokens: 250})
	const msg = "budget of 250 tokens for the run reached: 300 used"
	if end.StopReason != event.StopBudget || end.Error != msg {
		t.Fatalf("child ended %s %q, want budget %q", end.StopReason, end.Error, msg)
	}
	if *noops != 2 { // boss 100, runaway 100, 100: its third call is refused
		t.Errorf("runaway ran %d tool calls, want 2", *noops)
	}
	if res.Result.StopReason != event.StopBudget || res.Result.Err == nil || res.Result.Err.Error() != msg {
		t.Fatalf("run ended %s (%v), want budget %q", res.Result.StopReason, res.Result.Err, msg)
	}
}

// TestBudgetCost: a budget in dollars stops the child once its priced
// calls have spent it.
func TestBudgetCost(t *testing.T) {
	p, noops := budgetPool(t, spawn.Budget{CostUSD: 0.00025}, true)
	res, end, _ := runBudget(t, p, spawn.Budget{})
	const msg = "budget of $0.00025 for agent runaway reached: $0.0003 used"
	if end.StopReason != event.StopBudget || end.Error != msg {
		t.Fatalf("child ended %s %q, want budget %q", end.StopReason, end.Error, msg)
	}
	if *noops != 3 || res.Result.StopReason != event.StopCompleted {
		t.Errorf("runaway ran %d calls, boss ended %s; want 3, completed", *noops, res.Result.StopReason)
	}
}

// TestBudgetRefused: a budget out of bounds is refused by Build and by
// RunSink.
func TestBudgetRefused(t *testing.T) {
	_, err := pool.Build(pool.Config{Agents: []pool.AgentSpec{{Name: "a", Model: spendModel{}, Budget: spawn.Budget{Tokens: -5}}}}, pool.Options{})
	if err == nil || !strings.Contains(err.Error(), "Budget") || !strings.Contains(err.Error(), "negative") {
		t.Errorf("Build with a negative budget: %v", err)
	}
	p, _ := budgetPool(t, spawn.Budget{}, false)
	if _, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "x", Budget: spawn.Budget{CostUSD: 1e9}}, event.SinkFunc(func(event.Event) {})); err == nil {
		t.Error("RunSink with a budget of $1e9: no error")
	}
}
