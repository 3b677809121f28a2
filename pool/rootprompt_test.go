package pool_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// A team run as the root goes through agent/prompt-submit with the user's
// prompt (once; extra context reaches its members; a block ends the run
// before any member starts) and agent/turn-stop with its output, as an
// agent run as the root does.
func TestRootTeamPromptAndTurnStop(t *testing.T) {
	m, err := config.Parse("agentpool.yaml", []byte(`
agents:
  a: {model: {type: scripted, turns: ["a done"]}}
  b: {model: {type: scripted, turns: ["b done"]}}
teams:
  crew: {mode: parallel, members: [a, b]}
`))
	if err != nil {
		t.Fatal(err)
	}
	reg := hook.New(hook.Options{})
	var mu sync.Mutex
	var prompts, stops []string
	reg.OnPromptSubmit.Use(func(ctx context.Context, p hook.Prompt, next hook.Next[hook.Prompt, hook.PromptDecision]) hook.PromptDecision {
		mu.Lock()
		prompts = append(prompts, p.Agent+":"+p.Content)
		mu.Unlock()
		if strings.Contains(p.Content, "forbidden") {
			return hook.PromptDecision{Block: true, Reason: "not that"}
		}
		if p.Agent == "crew" {
			return hook.PromptDecision{Context: "CREW CONTEXT"}
		}
		return next(ctx, p)
	})
	reg.OnTurnStop.Use(func(ctx context.Context, s hook.TurnStop, next hook.Next[hook.TurnStop, hook.StopDecision]) hook.StopDecision {
		mu.Lock()
		stops = append(stops, s.Agent+":"+strings.ReplaceAll(s.FinalMessage, "\n", " "))
		mu.Unlock()
		if s.Agent == "crew" {
			return hook.StopDecision{Continue: true, Reason: "a team has no turn to continue: ignored"}
		}
		return next(ctx, s)
	})
	p, err := pool.New(m, pool.Options{Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: "crew", Prompt: "build it"}, sink)
	if err != nil || res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run: %v %+v", err, res.Result)
	}
	if err := eventtest.CheckInvariants(res.SessionID, events()); err != nil {
		t.Error(err)
	}
	mu.Lock()
	gotPrompts := strings.Join(prompts, "|")
	gotStops := strings.Join(stops, "|")
	mu.Unlock()
	// The members get the context before the prompt.
	if !strings.HasPrefix(gotPrompts, "crew:build it|") || strings.Count(gotPrompts, "CREW CONTEXT\n\nbuild it") != 2 {
		t.Errorf("prompts %q", gotPrompts)
	}
	// The members' stops, then the team's.
	if !strings.HasSuffix(gotStops, "crew:[a] a done  [b] b done") {
		t.Errorf("stops %q", gotStops)
	}

	res, err = p.RunSink(context.Background(), pool.RunRequest{Node: "crew", Prompt: "something forbidden"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopError || !strings.Contains(res.Result.Err.Error(), "prompt blocked: not that") {
		t.Errorf("blocked: %+v", res.Result)
	}
	kids, _ := p.Store().ListSessions(context.Background(), session.ListOptions{ParentID: res.SessionID})
	if len(kids) != 0 {
		t.Errorf("%d members ran after the block", len(kids))
	}
}
