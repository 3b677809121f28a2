package team_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

// runYAML runs node of a manifest and checks the stream's invariants.
func runYAML(t *testing.T, src, node string) (pool.RunResult, []event.Event) {
	t.Helper()
	m, err := config.Parse("teams.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: node, Prompt: "input"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	evs := events()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Fatal(err)
	}
	return res, evs
}

// memberEnds maps each member (by name) of the run's direct children to
// how it ended.
func memberEnds(root string, evs []event.Event) map[string][]event.StopReason {
	out := map[string][]event.StopReason{}
	for _, e := range evs {
		if sid, inner := event.Unwrap(root, e); sid == root {
			if end, ok := inner.(event.SpawnSessionEnd); ok {
				out[end.SourceName] = append(out[end.SourceName], end.StopReason)
			}
		}
	}
	return out
}

// refused returns the data of the spawn_refused events that session sid
// emitted.
func refused(root, sid string, evs []event.Event) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if by, inner := event.Unwrap(root, e); by == sid {
			if c, ok := inner.(event.Custom); ok && c.EventType == spawn.EventSpawnRefused {
				out = append(out, c.EventData)
			}
		}
	}
	return out
}

const failingMembers = `
agents:
  upper: {model: {type: test}}
  fail: {model: {type: scripted, turns: [{error: member exploded}]}}
  last: {model: {type: test}}
teams:
  strict: {mode: parallel, members: [upper, fail, last], require_all: true}
  lenient: {mode: parallel, members: [upper, fail, last]}
`

// require_all on a parallel team: every member runs to its end, and one
// failed member fails the team, naming it. Without it the team completes
// and its output names the failed member.
func TestParallelRequireAll(t *testing.T) {
	res, evs := runYAML(t, failingMembers, "strict")
	if res.Result.StopReason != event.StopError || res.Result.Err == nil || !strings.Contains(res.Result.Err.Error(), "1 of 3 members failed: fail") {
		t.Fatalf("strict team: %+v", res.Result)
	}
	ends := memberEnds(res.SessionID, evs)
	if len(ends["upper"]) != 1 || len(ends["fail"]) != 1 || len(ends["last"]) != 1 || ends["upper"][0] != event.StopCompleted {
		t.Fatalf("members did not all run to their end: %v", ends)
	}
	if !strings.Contains(res.Result.Output, "[upper]\n") || !strings.Contains(res.Result.Output, "[fail] failed (error") {
		t.Fatalf("strict team output: %q", res.Result.Output)
	}
	var last event.Event = evs[len(evs)-1]
	if re, ok := last.(event.RunError); !ok || !strings.Contains(re.Message, "fail") {
		t.Fatalf("the team's last event is %#v, want a run_error naming the member", last)
	}

	res, _ = runYAML(t, failingMembers, "lenient")
	if res.Result.StopReason != event.StopCompleted || !strings.Contains(res.Result.Output, "[fail] failed (error") {
		t.Fatalf("lenient team: %+v", res.Result)
	}
}

// A team takes one spawn per member from the run's budget before it starts
// any: when the budget cannot hold them all, no member runs (rather than
// whichever got there first), the team fails, and every member it could not
// start is a spawn_refused event of the team's session.
func TestTeamStartsAllMembersOrNone(t *testing.T) {
	const src = `
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: solo, prompt: one}}]
        - tool_calls: [{name: task, args: {agent_or_team: trio, prompt: two}}]
        - done
  solo: {model: {type: test, custom_output_text: solo}}
teams:
  trio: {mode: parallel, members: [solo, solo, solo]}
limits: {max_spawns: 4}
`
	res, evs := runYAML(t, src, "lead")
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "done" {
		t.Fatalf("lead: %+v", res.Result)
	}
	var trio string
	var trioEnd event.SpawnSessionEnd
	for _, e := range evs {
		_, inner := event.Unwrap(res.SessionID, e)
		switch v := inner.(type) {
		case event.SpawnSessionStart:
			if v.SourceName == "trio" {
				trio = v.ChildSessionID
			}
			if trio != "" && v.ParentSessionID == trio {
				t.Fatalf("a member of trio started: %+v", v)
			}
		case event.SpawnSessionEnd:
			if v.SourceName == "trio" {
				trioEnd = v
			}
		}
	}
	if trioEnd.StopReason != event.StopError || !strings.Contains(trioEnd.Error, "cannot reserve 3 spawns for trio") || !strings.Contains(trioEnd.Error, "(max_spawns 4, 2 left)") {
		t.Fatalf("end of trio: %+v", trioEnd)
	}
	got := refused(res.SessionID, trio, evs)
	if len(got) != 3 {
		t.Fatalf("%d spawn_refused events of trio, want 3: %v", len(got), got)
	}
	for _, d := range got {
		if d["node"] != "solo" || d["limit"] != "max_spawns" || d["mechanism"] != "spawn" {
			t.Fatalf("spawn_refused %v", d)
		}
	}
}

// Members refused by max_depth are spawn_refused events too.
func TestTeamMembersRefusedByDepth(t *testing.T) {
	const src = `
agents:
  lead:
    tools: [subagent]
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: pair, prompt: go}}]}, done]}
  solo: {model: {type: test}}
teams:
  pair: {mode: sequential, members: [solo, solo], require_all: false}
limits: {max_depth: 1}
`
	res, evs := runYAML(t, src, "lead")
	var pair string
	for _, e := range evs {
		if _, inner := event.Unwrap(res.SessionID, e); inner.Kind() == event.KindSpawnSessionStart {
			pair = inner.(event.SpawnSessionStart).ChildSessionID
		}
	}
	got := refused(res.SessionID, pair, evs)
	if len(got) != 2 || got[0]["limit"] != "max_depth" || got[0]["depth"] != 2 || got[0]["node"] != "solo" {
		t.Fatalf("spawn_refused of pair: %v", got)
	}
}
