package pool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/internal/jsonschema"
	"github.com/agentpool/agentpool/pool"
)

// corpusRun is one run of a corpus manifest: its events, by session.
type corpusRun struct {
	res    pool.RunResult
	events []event.Event
	p      *pool.Pool
}

// runCorpus runs node of an AgentPool-format manifest of
// config/testdata/agentpool offline, in a fresh workspace, and checks the
// stream invariants and that the run completed.
func runCorpus(t *testing.T, file, node string) corpusRun {
	t.Helper()
	m, err := config.Load(filepath.Join("..", "config", "testdata", "agentpool", file))
	if err != nil {
		t.Fatalf("Load %s:\n%v", file, err)
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("Ship on Friday.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Workspace: ws, Registry: batteries.Registry()})
	if err != nil {
		t.Fatalf("pool.New %s: %v", file, err)
	}
	t.Cleanup(func() { p.Close() })
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: node, Prompt: "Please draft the release notes"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	evs := events()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("%s %s: %+v", file, node, res.Result)
	}
	return corpusRun{res: res, events: evs, p: p}
}

// results returns the tool results of the root session, by tool.
func (r corpusRun) results() map[string]event.ToolCallComplete {
	out := map[string]event.ToolCallComplete{}
	for _, e := range r.events {
		if sid, inner := event.Unwrap(r.res.SessionID, e); sid == r.res.SessionID {
			if c, ok := inner.(event.ToolCallComplete); ok {
				out[c.ToolName] = c
			}
		}
	}
	return out
}

// spawned returns the names of the nodes spawned anywhere in the run.
func (r corpusRun) spawned() []string {
	var out []string
	for _, e := range r.events {
		if _, inner := event.Unwrap(r.res.SessionID, e); inner != nil {
			if s, ok := inner.(event.SpawnSessionStart); ok {
				out = append(out, s.SourceName)
			}
		}
	}
	slices.Sort(out)
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Every manifest of the corpus runs its entry point offline.
func TestAgentPoolCorpusRuns(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "config", "testdata", "agentpool", "*.yaml"))
	if err != nil || len(files) < 7 {
		t.Fatalf("corpus: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := runCorpus(t, filepath.Base(f), "")
			if r.res.Result.Output == "" {
				t.Error("empty output")
			}
		})
	}
}

// keys.yaml: the test model with its default (call_tools: all) calls
// every tool of the agent once and answers with what they returned; an
// agent without a model runs on default_model.
func TestCorpusKeysRun(t *testing.T) {
	r := runCorpus(t, "keys.yaml", "host")
	want := []string{"TodoWrite", "ask_agent", "delegate_to", "list_available_nodes", "send_message", "task", "task_output", "task_status", "task_stop"}
	if got := keys(r.results()); !slices.Equal(got, want) {
		t.Errorf("tools called = %v, want %v", got, want)
	}
	var summary map[string]any
	if err := json.Unmarshal([]byte(r.res.Result.Output), &summary); err != nil || !slices.Equal(keys(summary), want) {
		t.Errorf("output is not the tool summary: %q (%v)", r.res.Result.Output, err)
	}
	if !strings.Contains(r.results()["task"].ToolResult, `unknown agent or team "d"`) {
		t.Errorf("seed 3 makes \"d\" arguments: %s", r.results()["task"].ToolResult)
	}
	if out := runCorpus(t, "keys.yaml", "plain").res.Result.Output; out != "Default model answer." {
		t.Errorf("plain = %q", out)
	}
	if got := runCorpus(t, "keys.yaml", "pair").spawned(); !slices.Equal(got, []string{"plain", "quiet"}) {
		t.Errorf("pair spawned %v", got)
	}
}

func TestCorpusTestModelRuns(t *testing.T) {
	listed := runCorpus(t, "testmodel.yaml", "listed")
	if in := string(listed.results()["TodoWrite"].ToolInput); !strings.Contains(in, "Write the summary") {
		t.Errorf("tool_args not used: %s", in)
	}
	if listed.res.Result.Output != "Listed done." {
		t.Errorf("listed = %q", listed.res.Result.Output)
	}
	chosen := runCorpus(t, "testmodel.yaml", "chosen")
	if got := keys(chosen.results()); !slices.Equal(got, []string{"list_available_nodes"}) {
		t.Errorf("chosen called %v", got)
	}
	silent := runCorpus(t, "testmodel.yaml", "silent")
	if len(silent.results()) != 0 || !strings.HasPrefix(silent.res.Result.Output, "Test model reply to: ") {
		t.Errorf("call_tools: [] called %v and answered %q", keys(silent.results()), silent.res.Result.Output)
	}
}

func TestCorpusFallbackRun(t *testing.T) {
	r := runCorpus(t, "models.yaml", "")
	if r.res.Result.Output != "The second model answered." {
		t.Errorf("output = %q", r.res.Result.Output)
	}
}

// delegation.yaml: delegate_to and ask_agent spawn children like task.
func TestCorpusDelegationRun(t *testing.T) {
	r := runCorpus(t, "delegation.yaml", "coordinator")
	if got := r.spawned(); !slices.Equal(got, []string{"analyst", "analyst", "panel", "writer"}) {
		t.Errorf("spawned %v", got)
	}
	res := r.results()
	for _, name := range []string{"delegate_to", "ask_agent"} {
		if c := res[name]; c.IsError || !strings.Contains(c.ToolResult, `"session_id"`) {
			t.Errorf("%s: %+v", name, c)
		}
	}
	if !strings.Contains(res["ask_agent"].ToolResult, "The numbers add up.") {
		t.Errorf("ask_agent result = %s", res["ask_agent"].ToolResult)
	}
	lead := runCorpus(t, "delegation.yaml", "lead")
	if got := lead.spawned(); !slices.Equal(got, []string{"analyst", "writer"}) {
		t.Errorf("lead spawned %v", got)
	}
}

// toolsets.yaml: AgentPool's toolset types map to agentpool's tools; a
// toolset's tools map turns tools off.
func TestCorpusToolsetsRun(t *testing.T) {
	r := runCorpus(t, "toolsets.yaml", "")
	n, _ := r.p.Node("worker")
	names := n.(interface{ ToolNames() []string }).ToolNames()
	for _, want := range []string{"Read", "Write", "Bash", "BashOutput", "TodoWrite", "load_skill", "list_skills", "WebFetch"} {
		if !slices.Contains(names, want) {
			t.Errorf("worker lacks %s: %v", want, names)
		}
	}
	if slices.Contains(names, "KillShell") {
		t.Errorf("KillShell was turned off: %v", names)
	}
	res := r.results()
	if !strings.Contains(res["Read"].ToolResult, "Ship on Friday.") {
		t.Errorf("Read = %s", res["Read"].ToolResult)
	}
	if !strings.Contains(res["load_skill"].ToolResult, "Group the changes into Added, Changed and Fixed.") {
		t.Errorf("load_skill = %s", res["load_skill"].ToolResult)
	}
}

// composition.yaml: inherits and INHERIT give the drafter its model;
// connections forward its output to the reviewer, whose structured answer
// satisfies the schema, and to the archivist.
func TestCorpusCompositionRun(t *testing.T) {
	r := runCorpus(t, "composition.yaml", "")
	if r.res.Result.Output != "A draft of the release notes." {
		t.Errorf("output = %q", r.res.Result.Output)
	}
	if got := r.spawned(); !slices.Equal(got, []string{"archivist", "reviewer"}) {
		t.Errorf("spawned %v", got)
	}
	m := r.p.Manifest()
	schema, err := jsonschema.Parse(m.Agents["reviewer"].Output.Schema)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range r.events {
		_, inner := event.Unwrap(r.res.SessionID, e)
		if c, ok := inner.(event.Custom); ok && c.EventType == agent.EventStructuredOutput {
			found = true
			if err := schema.Validate(c.EventData["output"]); err != nil {
				t.Errorf("structured output %v: %v", c.EventData, err)
			}
		}
	}
	if !found {
		t.Error("no structured_output event")
	}
	sum := runCorpus(t, "composition.yaml", "summarizer")
	var v map[string]any
	if err := json.Unmarshal([]byte(sum.res.Result.Output), &v); err != nil || v["summary"] == "" {
		t.Errorf("summarizer output = %q", sum.res.Result.Output)
	}
}

func TestCorpusSkillsRun(t *testing.T) {
	r := runCorpus(t, "skills.yaml", "")
	res := r.results()
	if l := res["list_skills"].ToolResult; !strings.Contains(l, "code-review") || !strings.Contains(l, "release-notes") {
		t.Errorf("list_skills = %s", l)
	}
	if l := res["load_skill"].ToolResult; !strings.Contains(l, "Report bugs before style.") {
		t.Errorf("load_skill = %s", l)
	}
}

// fork.yaml: WolfHarness's model_variants and test:TEXT answer; the team
// of its second document runs both agents.
func TestCorpusForkRuns(t *testing.T) {
	r := runCorpus(t, "fork.yaml", "writer")
	if r.res.Result.Output != "Release notes drafted." {
		t.Errorf("writer output = %q", r.res.Result.Output)
	}
	if got := keys(r.results()); !slices.Equal(got, []string{"TodoWrite"}) {
		t.Errorf("tools called = %v", got)
	}
	team := runCorpus(t, "fork.yaml", "release")
	if !strings.Contains(team.res.Result.Output, "Looks good.") {
		t.Errorf("team output = %q", team.res.Result.Output)
	}
}

// team_mode.yaml: the lead delegates to each eligible member with
// ask_<member>; each member's run is a child session of the lead's.
func TestCorpusTeamModeRun(t *testing.T) {
	r := runCorpus(t, "team_mode.yaml", "coordinator")
	if got := r.spawned(); !slices.Equal(got, []string{"reviewer", "writer"}) {
		t.Errorf("spawned %v", got)
	}
	res := r.results()
	if got := keys(res); !slices.Equal(got, []string{"ask_reviewer", "ask_writer"}) {
		t.Errorf("tools called = %v", got)
	}
	for tool, want := range map[string]string{"ask_writer": "Draft written.", "ask_reviewer": "Draft approved."} {
		if c := res[tool]; c.IsError || !strings.Contains(c.ToolResult, want) {
			t.Errorf("%s: %+v", tool, c)
		}
	}
	if r.res.Result.Output != "Coordinator done." {
		t.Errorf("output = %q", r.res.Result.Output)
	}
	// solo's own team_mode makes it the lead of writer alone.
	if got := runCorpus(t, "team_mode.yaml", "solo").spawned(); !slices.Equal(got, []string{"writer"}) {
		t.Errorf("solo spawned %v", got)
	}
}
