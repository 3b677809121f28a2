package pool_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/team"
)

// failing is a custom node whose every run fails.
type failing struct{}

func (failing) Name() string                 { return "failing" }
func (failing) Description() string          { return "Always fails." }
func (failing) SourceType() event.SourceType { return event.SourceAgent }
func (failing) ModelID() string              { return "" }

func (failing) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: "failing", ParentSessionID: inv.Session.ParentID})
	inv.Sink.Emit(event.RunError{Message: "no luck", RunID: inv.RunID, AgentName: "failing"})
	return spawn.Result{StopReason: event.StopError, Err: errors.New("no luck")}
}

// A team whose run cannot fit max_spawns (itself and its members, members
// of member teams included) is refused by Build, naming the limit.
func TestBuildTeamSpawnBudget(t *testing.T) {
	cfg := pool.Config{
		Teams: []pool.TeamSpec{{Name: "big", Mode: team.Parallel, Members: slices.Repeat([]string{"shout"}, 1000)}},
		Nodes: []spawn.Node{shout{}},
	}
	_, err := pool.Build(cfg, pool.Options{})
	want := `team "big": Members: team "big" needs 1001 spawns per run (itself and 1000 members, counting members of member teams), more than Limits.MaxSpawns (1000)`
	if err == nil || err.Error() != want {
		t.Fatalf("Build: %v\nwant %s", err, want)
	}
	cfg.Limits.MaxSpawns = 1001
	build(t, cfg, pool.Options{})
}

// TeamSpec.RequireAll makes a parallel team fail when any member failed;
// ContinueOnFailure lets a sequential one go on. Each is refused on the
// other mode, where it would do nothing.
func TestBuildRequireAllByMode(t *testing.T) {
	p := build(t, pool.Config{
		Teams: []pool.TeamSpec{
			{Name: "strict", Mode: team.Parallel, Members: []string{"shout", "failing"}, RequireAll: true},
			{Name: "loose", Mode: team.Parallel, Members: []string{"shout", "failing"}},
			{Name: "chain", Mode: team.Sequential, Members: []string{"failing", "shout"}},
		},
		Nodes: []spawn.Node{shout{}, failing{}},
	}, pool.Options{})
	if res := run(t, p, "strict", "x"); res.StopReason != event.StopError || !strings.Contains(res.Err.Error(), "1 of 2 members failed: failing") {
		t.Errorf("strict: %+v", res)
	}
	if res := run(t, p, "loose", "x"); res.StopReason != event.StopCompleted {
		t.Errorf("loose: %+v", res)
	}
	if res := run(t, p, "chain", "x"); res.StopReason != event.StopError {
		t.Errorf("chain: %+v", res)
	}
	m := p.Manifest()
	if !m.Teams["strict"].RequireAll || m.Teams["loose"].RequireAll || !m.Teams["chain"].RequireAll {
		t.Errorf("Manifest().Teams require_all: strict %v, loose %v, chain %v", m.Teams["strict"].RequireAll, m.Teams["loose"].RequireAll, m.Teams["chain"].RequireAll)
	}

	_, err := pool.Build(pool.Config{
		Teams: []pool.TeamSpec{
			{Name: "p", Mode: team.Parallel, Members: []string{"shout"}, ContinueOnFailure: true},
			{Name: "s", Mode: team.Sequential, Members: []string{"shout"}, RequireAll: true},
		},
		Nodes: []spawn.Node{shout{}},
	}, pool.Options{})
	want := []string{
		`team "p": ContinueOnFailure: applies to sequential teams only (a parallel team runs every member; set RequireAll to fail it when any member fails)`,
		`team "s": RequireAll: applies to parallel teams only (a sequential team stops at its first failed member unless ContinueOnFailure is set)`,
	}
	if err == nil || !slices.Equal(strings.Split(err.Error(), "\n"), want) {
		t.Fatalf("Build: %v\nwant:\n%s", err, strings.Join(want, "\n"))
	}

	// From a manifest: require_all on a parallel team is TeamSpec.RequireAll.
	mf, err := config.Parse("m.yaml", []byte("agents:\n  a: {model: test}\nteams:\n  par: {mode: parallel, members: [a], require_all: true}\n  seq: {mode: sequential, members: [a], require_all: false}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pool.FromManifest(mf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Teams[0].RequireAll || cfg.Teams[0].ContinueOnFailure || cfg.Teams[1].RequireAll || !cfg.Teams[1].ContinueOnFailure {
		t.Errorf("FromManifest teams: %+v", cfg.Teams)
	}
}
