package replay_test

import (
	"context"
	"go.uber.org/goleak"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/replay"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// team is a delegating team with tool calls at three levels: the lead
// reads a file and hands the panel (a parallel team) a task; the panel's
// helper reads the file too, its checker answers.
const team = `default_agent: lead
agents:
  lead:
    tools: [subagent, file_access]
    model:
      type: scripted
      turns:
        - tool_calls:
            - {name: Read, args: {file_path: notes/in.md}}
            - {name: task, args: {agent_or_team: panel, prompt: "Check the notes."}}
        - "The answer is 42."
  helper:
    tools: [file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Read, args: {file_path: notes/in.md}}]
        - "The notes say 42."
  checker: {model: {type: scripted, turns: ["Checked."]}}
teams:
  panel: {mode: parallel, members: [helper, checker], shared_prompt: Be brief.}
`

func manifest(t *testing.T) *config.Manifest {
	t.Helper()
	m, err := config.Parse("team.yaml", []byte(team))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func workspace(t *testing.T, notes string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes", "in.md"), []byte(notes), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// recordedWS is the workspace of the last recording.
var recordedWS string

// record runs the team once and returns the store and the root session.
func record(t *testing.T) (session.Store, string) {
	t.Helper()
	st := memory.New()
	recordedWS = workspace(t, "the answer is 42")
	p, err := pool.New(manifest(t), pool.Options{Store: st, Workspace: recordedWS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() }) // with its store: read it before
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "What is the answer?"}, event.Discard)
	if err != nil || res.Result.StopReason != event.StopCompleted {
		t.Fatalf("recording run: %v %+v", err, res.Result)
	}
	return st, res.SessionID
}

// play replays rec in a fresh pool whose every model is the player's.
func play(t *testing.T, rec *replay.Recording, ws string) (replay.Result, pool.RunResult) {
	res, run, _ := playIn(t, rec, ws)
	return res, run
}

// playIn is play that also returns the replay's store (open until the
// test ends).
func playIn(t *testing.T, rec *replay.Recording, ws string) (replay.Result, pool.RunResult, session.Store) {
	t.Helper()
	pl := replay.NewPlayer(rec)
	reg := pool.NewRegistry()
	for _, typ := range reg.ModelTypes() {
		reg.AddModel(typ, func(spec config.ModelSpec) (model.Model, error) { return pl.Model(spec), nil })
	}
	st := memory.New()
	p, err := pool.New(manifest(t), pool.Options{Store: st, Registry: reg, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	var last pool.RunResult
	for i, prompt := range rec.Prompts {
		req := pool.RunRequest{Node: rec.Node, Prompt: prompt}
		if i > 0 {
			req.SessionID = last.SessionID
		}
		if last, err = p.RunSink(context.Background(), req, pl); err != nil {
			t.Fatal(err)
		}
	}
	return pl.Result(), last, st
}

func TestReplayReproducesTheRun(t *testing.T) {
	st, root := record(t)
	rec, err := replay.Load(context.Background(), st, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Node != "lead" || len(rec.Prompts) != 1 || rec.Prompts[0] != "What is the answer?" || len(rec.Order) != 4 || rec.Calls() != 5 {
		t.Fatalf("recording: node %q prompts %q sessions %d calls %d", rec.Node, rec.Prompts, len(rec.Order), rec.Calls())
	}
	res, run := play(t, rec, workspace(t, "the answer is 42"))
	if len(res.Divergences) != 0 {
		for _, d := range res.Divergences {
			t.Errorf("%+v %q %q", d, *d.Recorded, *d.Now)
		}
		t.FailNow()
	}
	if res.Replayed != 4 || res.Answered != 5 || res.Steps < 10 {
		t.Errorf("result %+v", res)
	}
	if run.Result.Output != "The answer is 42." || run.Result.StopReason != event.StopCompleted {
		t.Errorf("replayed answer %+v", run.Result)
	}
}

// The replay's event logs are the recording's, session by session, but
// for the ids and durations the replay made afresh.
func TestReplayReproducesTheEvents(t *testing.T) {
	st, root := record(t)
	rec, err := replay.Load(context.Background(), st, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace(t, "the answer is 42")
	_, run, now := playIn(t, rec, ws)
	want, got := logs(t, st, root, recordedWS), logs(t, now, run.SessionID, ws)
	if len(want) != 4 || len(got) != len(want) {
		t.Fatalf("sessions: recorded %d, replayed %d", len(want), len(got))
	}
	for agent, w := range want {
		g := got[agent]
		if len(w) < 3 || !slices.Equal(w, g) {
			t.Errorf("%s: recorded %d events, replayed %d\nrecorded:\n%s\nreplayed:\n%s", agent, len(w), len(g), strings.Join(w, "\n"), strings.Join(g, "\n"))
		}
	}
}

var (
	madeIDs   = regexp.MustCompile(`\b(ses|run|msg|task)_[0-9A-Za-z]+`)
	durations = regexp.MustCompile(`"duration_ms":[0-9]+`)
)

// logs are the events of each session of root's tree by agent (unique in
// the team), as JSON without the ids and durations a run makes, sorted:
// tools running at once end in either order.
func logs(t *testing.T, st session.Store, root, ws string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	all, err := session.Subtree(ctx, st, root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, s := range all {
		recs, err := st.Events(ctx, s.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var evs []string
		for _, r := range recs {
			b, err := event.Marshal(r.Event)
			if err != nil {
				t.Fatal(err)
			}
			j := strings.ReplaceAll(string(b), ws, "WORKSPACE")
			evs = append(evs, durations.ReplaceAllString(madeIDs.ReplaceAllString(j, "${1}_ID"), `"duration_ms":0`))
		}
		slices.Sort(evs)
		out[s.AgentName] = evs
	}
	return out
}

func TestReplayReportsAChangedTool(t *testing.T) {
	st, root := record(t)
	rec, err := replay.Load(context.Background(), st, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := play(t, rec, workspace(t, "the answer is 41"))
	if len(res.Divergences) != 2 {
		t.Fatalf("want the two reads changed, got %+v", res.Divergences)
	}
	agents := map[string]bool{}
	for _, d := range res.Divergences {
		if d.Kind != replay.StepToolResult || d.Key != "call 1 Read" || d.Turn != 1 || d.Recorded == nil || d.Now == nil ||
			!strings.Contains(*d.Recorded, "the answer is 42") || !strings.Contains(*d.Now, "the answer is 41") {
			t.Errorf("divergence %+v", d)
		}
		agents[d.Agent] = true
	}
	if !agents["lead"] || !agents["helper"] {
		t.Errorf("divergences in %v, want lead and helper", agents)
	}
}

// A child session replays alone: its prompt is the one it was given, and
// a team's is its first member's without the shared prompt.
func TestReplayAChild(t *testing.T) {
	st, root := record(t)
	kids, err := st.ListSessions(context.Background(), session.ListOptions{ParentID: root})
	if err != nil || len(kids) != 1 || kids[0].AgentName != "panel" {
		t.Fatalf("children of the root: %v %+v", err, kids)
	}
	m := manifest(t)
	rec, err := replay.Load(context.Background(), st, kids[0].ID, func(node string) string { return m.Teams[node].SharedPrompt })
	if err != nil {
		t.Fatal(err)
	}
	if rec.Node != "panel" || len(rec.Prompts) != 1 || rec.Prompts[0] != "Check the notes." {
		t.Fatalf("recording of the team: %q %q", rec.Node, rec.Prompts)
	}
	res, _ := play(t, rec, workspace(t, "the answer is 42"))
	if len(res.Divergences) != 0 || res.Replayed != 3 || res.Answered != 3 {
		t.Fatalf("result %+v", res)
	}
}

// A session that asks for more answers than were recorded gets an error
// from the model, and the replay says which session and call.
func TestReplayNoAnswer(t *testing.T) {
	st, root := record(t)
	rec, err := replay.Load(context.Background(), st, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	lead := rec.Tapes[root]
	lead.Responses = lead.Responses[:1] // as if the recording had stopped there
	res, run := play(t, rec, workspace(t, "the answer is 42"))
	if run.Result.StopReason != event.StopError {
		t.Errorf("run %+v", run.Result)
	}
	var found bool
	for _, d := range res.Divergences {
		if d.Kind == "model_call" && d.Session == root && d.Turn == 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("no model_call divergence for the lead's second call: %+v", res.Divergences)
	}
}

// A session continued by a second run replays both runs, in one session.
func TestReplayTwoRuns(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	p, err := pool.New(manifest(t), pool.Options{Store: st, Workspace: workspace(t, "the answer is 42")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	first, err := p.RunSink(ctx, pool.RunRequest{Prompt: "What is the answer?"}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	second, err := p.RunSink(ctx, pool.RunRequest{SessionID: first.SessionID, Prompt: "And again?"}, event.Discard)
	if err != nil || second.SessionID != first.SessionID {
		t.Fatalf("second run: %v %+v", err, second)
	}
	rec, err := replay.Load(ctx, st, first.SessionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.Prompts, []string{"What is the answer?", "And again?"}) || len(rec.Outcomes()) != 2 {
		t.Fatalf("prompts %q outcomes %+v", rec.Prompts, rec.Outcomes())
	}
	res, run := play(t, rec, workspace(t, "the answer is 42"))
	if len(res.Divergences) != 0 || res.Answered != res.ModelCalls {
		t.Fatalf("result %+v", res)
	}
	if o := rec.Outcomes()[1]; run.Result.Output != o.Answer || string(run.Result.StopReason) != o.Stop {
		t.Errorf("second run now %+v, recorded %+v", run.Result, o)
	}
}
