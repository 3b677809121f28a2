package team_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/team"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const manifest = `
agents:
  upper:
    model: {type: test}          # echoes its prompt
  fail:
    model: {type: scripted, turns: [{error: member exploded}]}
  last:
    model: {type: test}
teams:
  chain: {mode: sequential, members: [upper, last], shared_prompt: "Team rule."}
  brittle: {mode: sequential, members: [fail, last]}
  lenient: {mode: sequential, members: [fail, last], require_all: false}
  fan: {mode: parallel, members: [upper, last, fail]}
  doomed: {mode: parallel, members: [fail, fail]}
`

func run(t *testing.T, node string) (pool.RunResult, []event.Event, *pool.Pool) {
	t.Helper()
	m, err := config.Parse("teams.yaml", []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: node, Prompt: "input"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	evs := events()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Fatal(err)
	}
	return res, evs, p
}

func TestSequentialFeedsOutputForward(t *testing.T) {
	res, evs, _ := run(t, "chain")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("%+v", res.Result)
	}
	// upper echoes "Team rule.\n\ninput"; last echoes what upper said.
	var prompts []string
	for _, e := range evs {
		if s, ok := e.(event.SpawnSessionStart); ok {
			prompts = append(prompts, s.Metadata["prompt"].(string))
			if s.SpawnMechanism != event.MechanismSpawn || s.SourceType != event.SourceAgent {
				t.Errorf("member start %+v", s)
			}
		}
	}
	if len(prompts) != 2 || !strings.HasPrefix(prompts[0], "Team rule.") || !strings.Contains(prompts[1], "Test model reply to") {
		t.Fatalf("member prompts %q", prompts)
	}
	if !strings.Contains(res.Result.Output, "Test model reply to") {
		t.Fatalf("output %q", res.Result.Output)
	}
}

func TestRequireAllStopsTheChain(t *testing.T) {
	res, evs, _ := run(t, "brittle")
	if res.Result.StopReason != event.StopError {
		t.Fatalf("%+v", res.Result)
	}
	starts := 0
	for _, e := range evs {
		if _, ok := e.(event.SpawnSessionStart); ok {
			starts++
		}
	}
	if starts != 1 {
		t.Fatalf("chain went on after a failure: %d members started", starts)
	}
	res, _, _ = run(t, "lenient")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("require_all false: %+v", res.Result)
	}
}

func TestParallelMembersAreChildrenOfTheTeam(t *testing.T) {
	res, evs, p := run(t, "fan")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("one failing member of three fails the team: %+v", res.Result)
	}
	ends := map[string]event.StopReason{}
	for _, e := range evs {
		if s, ok := e.(event.SpawnSessionEnd); ok {
			ends[s.SourceName] = s.StopReason
		}
	}
	if ends["fail"] != event.StopError || ends["upper"] != event.StopCompleted || ends["last"] != event.StopCompleted {
		t.Fatalf("member ends %v", ends)
	}
	kids, _ := p.Store().ListSessions(context.Background(), session.ListOptions{ParentID: res.SessionID})
	if len(kids) != 3 {
		t.Fatalf("%d children of the team session", len(kids))
	}
	res, _, _ = run(t, "doomed")
	if res.Result.StopReason != event.StopError {
		t.Fatalf("all members failed: %+v", res.Result)
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []team.Config{
		{Mode: team.Parallel, Members: []string{"a"}},
		{Name: "t", Mode: "circle", Members: []string{"a"}},
		{Name: "t", Mode: team.Sequential},
	} {
		if _, err := team.New(cfg); err == nil {
			t.Errorf("accepted %+v", cfg)
		}
	}
}
