package pool_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// spawnInfo is what a root stream says about one spawn.
type spawnInfo struct {
	name, parent string
	mechanism    event.Mechanism
	sourceType   event.SourceType
	stop         event.StopReason
	depth        int
}

// runExample runs one node of a manifest through the pool, checks the stream
// invariants and that the run and every child completed, and returns the
// spawns in start order (parent given by name).
func runExample(t *testing.T, m *config.Manifest, node string) []spawnInfo {
	t.Helper()
	p, err := pool.New(m, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: node, Prompt: "Explain how this pool works"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	evs := events()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output == "" {
		t.Fatalf("run of %s: %+v", node, res.Result)
	}
	names := map[string]string{res.SessionID: p.DefaultNode()}
	if node != "" {
		names[res.SessionID] = node
	}
	var out []spawnInfo
	index := map[string]int{}
	for _, e := range evs {
		_, inner := event.Unwrap(res.SessionID, e)
		switch v := inner.(type) {
		case event.SpawnSessionStart:
			names[v.ChildSessionID] = v.SourceName
			index[v.ChildSessionID] = len(out)
			out = append(out, spawnInfo{name: v.SourceName, parent: names[v.ParentSessionID], mechanism: v.SpawnMechanism, sourceType: v.SourceType, depth: v.Depth})
		case event.SpawnSessionEnd:
			out[index[v.ChildSessionID]].stop = v.StopReason
		}
	}
	ctx := context.Background()
	sub, err := session.Subtree(ctx, p.Store(), res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(sub) != len(out)+1 {
		t.Fatalf("%d stored sessions in the tree, %d spawns", len(sub), len(out))
	}
	for _, s := range sub {
		if s.Status != session.StatusCompleted {
			t.Errorf("session %s (%s): status %s", s.ID, s.AgentName, s.Status)
		}
	}
	for _, s := range out {
		if s.stop != event.StopCompleted {
			t.Errorf("spawn %+v did not complete", s)
		}
	}
	return out
}

// checkSpawns checks that got holds exactly the spawns of want (in any
// order; stop reasons are not compared).
func checkSpawns(t *testing.T, got []spawnInfo, want []spawnInfo) {
	t.Helper()
	left := append([]spawnInfo(nil), got...)
	for _, w := range want {
		found := false
		for i, g := range left {
			g.stop = ""
			if g == w {
				left = append(left[:i], left[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no spawn %+v in %+v", w, got)
		}
	}
	if len(left) != 0 {
		t.Errorf("unexpected spawns %+v", left)
	}
}

func TestExampleAgentPoolStyle(t *testing.T) {
	path := "../docs/spec/examples/agentpool-style.yaml"
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join("..", "examples", "agentpool-style.yaml")
	}
	m, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	checkSpawns(t, runExample(t, m, ""), []spawnInfo{
		{name: "research_team", parent: "planner", mechanism: event.MechanismTask, sourceType: event.SourceTeamParallel, depth: 1},
		{name: "searcher", parent: "research_team", mechanism: event.MechanismSpawn, sourceType: event.SourceAgent, depth: 2},
		{name: "critic", parent: "research_team", mechanism: event.MechanismSpawn, sourceType: event.SourceAgent, depth: 2},
		{name: "summarizer", parent: "searcher", mechanism: event.MechanismWorker, sourceType: event.SourceAgent, depth: 3},
	})
	checkSpawns(t, runExample(t, m, "review_chain"), []spawnInfo{
		{name: "searcher", parent: "review_chain", mechanism: event.MechanismSpawn, sourceType: event.SourceAgent, depth: 1},
		{name: "critic", parent: "review_chain", mechanism: event.MechanismSpawn, sourceType: event.SourceAgent, depth: 1},
		{name: "summarizer", parent: "searcher", mechanism: event.MechanismWorker, sourceType: event.SourceAgent, depth: 2},
	})
}

func TestExampleDefault(t *testing.T) {
	checkSpawns(t, runExample(t, config.Default(), ""), []spawnInfo{
		{name: "research", parent: "orchestrator", mechanism: event.MechanismTask, sourceType: event.SourceTeamParallel, depth: 1},
		{name: "researcher", parent: "research", mechanism: event.MechanismSpawn, sourceType: event.SourceAgent, depth: 2},
		{name: "critic", parent: "research", mechanism: event.MechanismSpawn, sourceType: event.SourceAgent, depth: 2},
		{name: "fact_checker", parent: "researcher", mechanism: event.MechanismWorker, sourceType: event.SourceAgent, depth: 3},
	})
}

func TestExampleNested(t *testing.T) {
	m, err := config.Load(filepath.Join("..", "examples", "nested.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checkSpawns(t, runExample(t, m, ""), []spawnInfo{
		{name: "squad", parent: "lead", mechanism: event.MechanismTask, sourceType: event.SourceTeamParallel, depth: 1},
		{name: "scout", parent: "squad", mechanism: event.MechanismSpawn, sourceType: event.SourceAgent, depth: 2},
		{name: "pipeline", parent: "squad", mechanism: event.MechanismSpawn, sourceType: event.SourceTeamSequential, depth: 2},
		{name: "checker", parent: "scout", mechanism: event.MechanismWorker, sourceType: event.SourceAgent, depth: 3},
		{name: "drafter", parent: "pipeline", mechanism: event.MechanismSpawn, sourceType: event.SourceAgent, depth: 3},
		{name: "editor", parent: "pipeline", mechanism: event.MechanismSpawn, sourceType: event.SourceAgent, depth: 3},
		{name: "checker", parent: "editor", mechanism: event.MechanismWorker, sourceType: event.SourceAgent, depth: 4},
	})
}
