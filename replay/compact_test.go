package replay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/replay"
	"github.com/agentpool/agentpool/session/memory"
)

// compacting: a lead with a small context window reads three long parts
// through a child, which passes its compaction threshold.
func compacting() string {
	part := strings.Repeat("lorem ipsum dolor sit amet ", 150)
	return fmt.Sprintf(`default_agent: lead
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      context_window: 5000
      compact_threshold: 0.6
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: reader, prompt: "part 1"}}]
        - tool_calls: [{name: task, args: {agent_or_team: reader, prompt: "part 2"}}]
        - tool_calls: [{name: task, args: {agent_or_team: reader, prompt: "part 3"}}]
        - "done: parts read"
  reader:
    model: {type: scripted, turns: [%q]}
`, part)
}

// A compaction's summary comes from the recording: the replay's first
// compaction is the recorded one. When it compacts is the agent's choice,
// made from the provider's token counts of each call, which the store
// does not keep: this replay compacts once more than the recording, and
// says so (a compaction divergence) rather than making a summary up.
func TestReplayACompactedRun(t *testing.T) {
	ctx := context.Background()
	m, err := config.Parse("compact.yaml", []byte(compacting()))
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	p, err := pool.New(m, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "read the parts"}, event.Discard)
	if err != nil || res.Result.StopReason != event.StopCompleted {
		t.Fatalf("recording: %v %+v", err, res.Result)
	}
	rec, err := replay.Load(ctx, st, res.SessionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	recorded := rec.Tapes[res.SessionID].Summaries
	if len(recorded) != 1 || recorded[0] == "" {
		t.Fatalf("recorded summaries %q", recorded)
	}
	pl := replay.NewPlayer(rec)
	reg := pool.NewRegistry()
	for _, typ := range reg.ModelTypes() {
		reg.AddModel(typ, func(spec config.ModelSpec) (model.Model, error) { return pl.Model(spec), nil })
	}
	m2, _ := config.Parse("compact.yaml", []byte(compacting()))
	var summaries []string
	sink := event.SinkFunc(func(e event.Event) {
		pl.Emit(e)
		if c, ok := e.(event.Custom); ok && c.EventType == "compaction" {
			s, _ := c.EventData["summary"].(string)
			summaries = append(summaries, s)
		}
	})
	p2, err := pool.New(m2, pool.Options{Store: memory.New(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p2.Close() })
	if _, err := p2.RunSink(ctx, pool.RunRequest{Prompt: rec.Prompts[0]}, sink); err != nil {
		t.Fatal(err)
	}
	if len(summaries) == 0 || summaries[0] != recorded[0] {
		t.Errorf("the replay's summaries %q, want the recorded %q first", summaries, recorded)
	}
	var asked bool
	for _, d := range pl.Result().Divergences {
		if d.Kind == "compaction" && d.Session == res.SessionID && *d.Now == "compaction 2" {
			asked = true
		}
	}
	if !asked {
		t.Errorf("no compaction divergence: %+v", pl.Result().Divergences)
	}
}
