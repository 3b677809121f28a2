package acpagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/internal/opencodetest"
	"github.com/agentpool/agentpool/pool"
)

// A manifest's `type: acp` member (provider custom: the SDK's example
// agent) in a parallel team with a native agent: both children run,
// each an observable child session, and the team's output has both
// answers. requires_tool_confirmation: never grants the agent's
// permission request.
func TestManifestParallelTeamWithAnACPMember(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentpool.yaml")
	yaml := `
agents:
  native:
    model: {type: test, custom_output_text: "native answer"}
  example:
    type: acp
    provider: custom
    command: ` + exampleAgent + `
    description: the SDK's example agent
    requires_tool_confirmation: never
teams:
  pair: {mode: parallel, members: [native, example]}
`
	if err := os.WriteFile(manifest, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := batteries.Registry()
	m, err := config.LoadWith(manifest, batteries.ConfigOptions(reg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Registry: reg, Hooks: hook.New(hook.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, evs := run(t, context.Background(), p, "pair", "hello", nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("team %+v", res.Result)
	}
	ends := map[string]event.SpawnSessionEnd{}
	for _, e := range evs {
		if v, ok := e.(event.SpawnSessionEnd); ok {
			ends[v.SourceName] = v
		}
	}
	if e := ends["example"]; e.StopReason != event.StopCompleted || !strings.Contains(e.LastAssistantMessage, "Perfect!") {
		t.Errorf("example child %+v", e)
	}
	if e := ends["native"]; e.StopReason != event.StopCompleted || e.LastAssistantMessage != "native answer" {
		t.Errorf("native child %+v", e)
	}
	if !strings.Contains(res.Result.Output, "native answer") || !strings.Contains(res.Result.Output, "Perfect!") {
		t.Errorf("team output %q", res.Result.Output)
	}
}

// The "done when": a manifest's parallel team of a native agent
// and the real `opencode acp` (provider custom, so that the pinned binary
// is used; cwd is its project, env keeps it offline) runs against the
// fake model: both children are child sessions with their
// spawn_session_start and spawn_session_end, the team's output has both
// answers, and no opencode process outlives the run. (Each front end's
// view of this team is tested with the CLI: cli's
// TestRunTeamWithOpencodeTerminalAndHooks and tests/node/*/opencode-member.)
func TestManifestParallelTeamWithOpencode(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	model := opencodetest.NewModel(t, "opencode says hello from the fake model.")
	oc := opencodetest.NewSetup(t, model, "")
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentpool.yaml")
	yaml := `
agents:
  native:
    model: {type: test, custom_output_text: "native answer"}
` + oc.MemberYAML("opencode", "the real opencode") + `
teams:
  pair: {mode: parallel, members: [native, opencode]}
`
	if err := os.WriteFile(manifest, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := batteries.Registry()
	m, err := config.LoadWith(manifest, batteries.ConfigOptions(reg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Registry: reg, Hooks: hook.New(hook.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, evs := run(t, context.Background(), p, "pair", "Say hello.", nil)
	if left := oc.Leftovers(); len(left) > 0 {
		t.Errorf("opencode processes outlived the run: %v", left)
	}
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("team %+v", res.Result)
	}
	starts := map[string]event.SpawnSessionStart{}
	ends := map[string]event.SpawnSessionEnd{}
	for _, e := range evs {
		switch v := e.(type) {
		case event.SpawnSessionStart:
			starts[v.SourceName] = v
		case event.SpawnSessionEnd:
			ends[v.SourceName] = v
		}
	}
	for _, name := range []string{"native", "opencode"} {
		s, e := starts[name], ends[name]
		if s.ChildSessionID == "" || s.ParentSessionID != res.SessionID || e.ChildSessionID != s.ChildSessionID {
			t.Errorf("%s: spawn_session_start %+v, spawn_session_end %+v (team session %s)", name, s, e, res.SessionID)
		}
	}
	if e := ends["opencode"]; e.StopReason != event.StopCompleted || e.LastAssistantMessage != "opencode says hello from the fake model." {
		t.Errorf("opencode child %+v", e)
	}
	if e := ends["native"]; e.StopReason != event.StopCompleted || e.LastAssistantMessage != "native answer" {
		t.Errorf("native child %+v", e)
	}
	if !strings.Contains(res.Result.Output, "native answer") || !strings.Contains(res.Result.Output, "opencode says hello from the fake model.") {
		t.Errorf("team output %q", res.Result.Output)
	}
}

// A manifest's `type: acp` member with toolsets, workers and MCP servers
// of its own: the toolsets and the worker tool are served to its agent
// (the test agent mcpagent), acting in its cwd (relative to the
// manifest); its worker runs as a child of its session; its own MCP
// server is passed in session/new next to agentpool's.
func TestManifestMemberWithToolsetsAndWorkers(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "project"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "project", "notes.txt"), []byte("in the project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "agentpool.yaml")
	yaml := `
agents:
  helper:
    description: says hi
    model: {type: test, custom_output_text: "helper says hi"}
  ext:
    type: acp
    provider: custom
    command: ` + mcpAgent + `
    cwd: ./project
    tools: [file_access]
    workers: [helper]
    mcp_servers:
      - {name: own, type: stdio, command: "true"}
`
	if err := os.WriteFile(manifest, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := batteries.Registry()
	m, err := config.LoadWith(manifest, batteries.ConfigOptions(reg))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Warnings) > 0 {
		t.Errorf("warnings %v", m.Warnings)
	}
	p, err := pool.New(m, pool.Options{Registry: reg, Hooks: hook.New(hook.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, evs := run(t, context.Background(), p, "ext", `servers
call Read {"file_path":"notes.txt"}
call ask_helper {"prompt":"hi"}`, nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("result %+v", res.Result)
	}
	for _, want := range []string{"servers: own,agentpool", "Read:      1\tin the project", `ask_helper: {"output":"helper says hi"`} {
		if !strings.Contains(res.Result.Output, want) {
			t.Errorf("output %q lacks %q", res.Result.Output, want)
		}
	}
	var start event.SpawnSessionStart
	for _, e := range evs {
		if v, ok := e.(event.SpawnSessionStart); ok {
			start = v
		}
	}
	if start.SourceName != "helper" || start.ParentSessionID != res.SessionID || start.SpawnMechanism != event.MechanismWorker || start.ToolCallID != "tc_2" {
		t.Errorf("worker start %+v", start)
	}
}
