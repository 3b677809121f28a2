package command_test

// Hook scripts written the way published Claude Code hooks are (a Bash
// guard, a Stop hook reading the transcript, an Edit|Write logger, a
// SubagentStop summariser, a plugin, an async logger), run unchanged against
// delegating pools: each test checks that the script did its job.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
)

// scripts is the absolute path of testdata/scripts; the test is skipped
// when python3 is missing (the scripts are python3, as many published
// hooks are).
func scripts(t *testing.T) string {
	t.Helper()
	if python(t) == "" {
		t.Skip("python3 is not installed")
	}
	dir, err := filepath.Abs("testdata/scripts")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	pythonOnce sync.Once
	pythonPath string
)

// python is the python3 interpreter itself ("" when there is none): a
// version manager's shim (a shell script) would start every hook slower.
func python(t *testing.T) string {
	pythonOnce.Do(func() {
		out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
		if err == nil {
			pythonPath = strings.TrimSpace(string(out))
		}
	})
	return pythonPath
}

// settingsJSON renders a settings file: event -> matcher -> command.
func settingsJSON(t *testing.T, hooks map[string][]map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"hooks": hooks})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func cmdHook(command string) map[string]any {
	return map[string]any{"type": "command", "command": command}
}

func group(matcher string, hooks ...map[string]any) map[string]any {
	g := map[string]any{"hooks": hooks}
	if matcher != "" {
		g["matcher"] = matcher
	}
	return g
}

func (p *project) runNode(node, prompt string) pool.RunResult {
	p.t.Helper()
	res, err := p.pool.RunSink(context.Background(), pool.RunRequest{Node: node, Prompt: prompt}, event.Discard)
	if err != nil {
		p.t.Fatal(err)
	}
	return res
}

func (p *project) childNamed(parent, name string) string {
	p.t.Helper()
	for _, k := range p.children(parent) {
		if k.AgentName == name {
			return k.ID
		}
	}
	p.t.Fatalf("no child %s of %s", name, parent)
	return ""
}

// A Bash guard (PreToolUse, matcher Bash) that reads tool_input.command and
// exits 2 on rm -rf protects the workspace when the Bash call comes from a
// subagent: the directory survives, the subagent reads the reason, and the
// next, harmless command runs.
func TestScriptBashGuardInSubagent(t *testing.T) {
	dir := scripts(t)
	p := newProject(t, `
workspace: .
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: ops, prompt: "Clean up the workspace."}}]
        - "lead done"
  ops:
    tools: [execution]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: "rm -rf keep"}}]
        - tool_calls: [{name: Bash, args: {command: "ls keep"}}]
        - "ops done"
`, settingsJSON(t, map[string][]map[string]any{
		"PreToolUse": {group("Bash", cmdHook(python(t)+" "+dir+"/bash_guard.py"))},
	}), nil)
	if err := os.MkdirAll(filepath.Join(p.dir, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(p.dir, "keep", "precious.txt"), []byte("x"), 0o644)
	res := p.runNode("lead", "go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "keep", "precious.txt")); err != nil {
		t.Fatalf("the guard did not protect the workspace: %v", err)
	}
	ops := p.childNamed(res.SessionID, "ops")
	rs := p.toolResults(ops)
	if len(rs) != 2 || !rs[0].IsError || !strings.Contains(rs[0].Text, "Blocked: rm -rf is not allowed") ||
		rs[1].IsError || !strings.Contains(rs[1].Text, "precious.txt") {
		t.Errorf("the subagent's tool results: %+v", rs)
	}
	log := p.payloads("guard.jsonl")
	if len(log) != 2 || log[0]["blocked"] != true || log[1]["blocked"] != false ||
		log[0]["agent_type"] != "ops" || log[0]["session_id"] != res.SessionID || log[0]["command"] != "rm -rf keep" {
		t.Errorf("what the guard saw: %v", log)
	}
}

// A Stop hook that reads transcript_path (the last assistant text, the
// tool uses, in Claude Code's format and vocabulary) gets the right answer
// and blocks once: the agent goes on with the reason, then stops.
func TestScriptStopReadsTranscript(t *testing.T) {
	dir := scripts(t)
	p := newProject(t, `
workspace: .
agents:
  main:
    tools: [subagent, file_access]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: "Help.", description: "get help"}}]
        - tool_calls: [{name: Write, args: {file_path: notes.txt, content: "x"}}, {name: Read, args: {file_path: notes.txt}}]
        - "all done"
        - "confirmed"
  helper:
    model: {type: scripted, turns: ["helped"]}
`, settingsJSON(t, map[string][]map[string]any{
		"Stop": {group("", cmdHook(python(t)+" "+dir+"/stop_transcript.py"))},
	}), nil)
	res := p.runNode("main", "go")
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "confirmed" {
		t.Fatalf("run ended %s %q: %v", res.Result.StopReason, res.Result.Output, res.Result.Err)
	}
	log := p.payloads("stop.jsonl")
	if len(log) != 2 {
		t.Fatalf("Stop ran %d times, want 2: %v", len(log), log)
	}
	first, second := log[0], log[1]
	tools, _ := json.Marshal(first["tools"])
	if first["stop_hook_active"] != false || first["last_text"] != "all done" || first["last_assistant_message"] != "all done" ||
		first["tool_uses"] != float64(3) || string(tools) != `["Task","Write","Read"]` {
		t.Errorf("first Stop read %v (tools %s)", first, tools)
	}
	if second["stop_hook_active"] != true || second["last_text"] != "confirmed" {
		t.Errorf("second Stop read %v", second)
	}
	var reason bool
	for _, m := range p.messages(res.SessionID) {
		reason = reason || m.Synthetic && m.Text() == "Before you stop: confirm the 3 tool uses."
	}
	if !reason {
		t.Error("the block's reason did not reach the agent")
	}
}

// A PostToolUse logger on Edit|Write logs exactly the files a worker wrote
// and edited (not its reads or commands).
func TestScriptEditWriteLogger(t *testing.T) {
	dir := scripts(t)
	p := newProject(t, `
workspace: .
agents:
  lead:
    workers: [writer]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: ask_writer, args: {prompt: "Write the notes."}}]
        - "lead done"
  writer:
    tools: [file_access, execution]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Write, args: {file_path: a.txt, content: "one\n"}}]
        - tool_calls: [{name: Edit, args: {file_path: a.txt, old_string: "one", new_string: "two"}}]
        - tool_calls: [{name: Read, args: {file_path: a.txt}}, {name: Bash, args: {command: "cat a.txt"}}]
        - "written"
`, settingsJSON(t, map[string][]map[string]any{
		"PostToolUse": {group("Edit|Write", cmdHook(python(t)+" "+dir+"/edit_logger.py"))},
	}), nil)
	res := p.runNode("lead", "go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	got, err := os.ReadFile(filepath.Join(p.dir, "edits.log"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "Write a.txt writer\nEdit a.txt writer\n" {
		t.Errorf("edits.log:\n%s", got)
	}
}

// A SubagentStop summariser reads agent_transcript_path: for every
// delegation mechanism (task, worker, async task, the members of parallel
// and sequential teams, and the teams themselves, which are subagents with
// agent_type the team's name) it finds the subagent's prompt and answer.
func TestScriptSubagentSummariser(t *testing.T) {
	dir := scripts(t)
	p := newProject(t, `
agents:
  lead:
    tools: [subagent]
    workers: [w]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: "task prompt"}}]
        - tool_calls: [{name: ask_w, args: {prompt: "worker prompt"}}]
        - tool_calls: [{name: task, args: {agent_or_team: par, prompt: "par prompt"}}]
        - tool_calls: [{name: task, args: {agent_or_team: seq, prompt: "seq prompt"}}]
        - tool_calls: [{name: task, args: {agent_or_team: bg, prompt: "async prompt", async_mode: true}}]
        - "waiting"
        - "lead done"
  helper: {model: {type: scripted, turns: ["helper answer"]}}
  w: {model: {type: scripted, turns: ["worker answer"]}}
  bg: {model: {type: scripted, turns: ["async answer"]}}
  m1: {model: {type: scripted, turns: ["m1 answer"]}}
  m2: {model: {type: scripted, turns: ["m2 answer"]}}
teams:
  par: {mode: parallel, members: [m1, m2]}
  seq: {mode: sequential, members: [m1, m2]}
`, settingsJSON(t, map[string][]map[string]any{
		"SubagentStop": {group("", cmdHook(python(t)+" "+dir+"/subagent_summary.py"))},
	}), nil)
	res := p.runNode("lead", "go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	var got []string
	for _, s := range p.payloads("summaries.jsonl") {
		if s["session_id"] != res.SessionID || s["sidechain"] != true {
			t.Errorf("summary %v", s)
		}
		got = append(got, s["agent_type"].(string)+": "+s["prompt"].(string)+" -> "+s["answer"].(string))
	}
	sort.Strings(got)
	want := []string{
		"bg: async prompt -> async answer",
		"helper: task prompt -> helper answer",
		"m1: par prompt -> m1 answer",
		"m1: seq prompt -> m1 answer",
		"m2: m1 answer -> m2 answer", // a sequential team passes the output on
		"m2: par prompt -> m2 answer",
		"par: par prompt -> [m1]\nm1 answer\n\n[m2]\nm2 answer",
		"seq: seq prompt -> m2 answer",
		"w: worker prompt -> worker answer",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("summaries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A Claude Code plugin (a directory with .claude-plugin/ and
// hooks/hooks.json) listed in hooks.settings: its commands run with
// ${CLAUDE_PLUGIN_ROOT} substituted and CLAUDE_PLUGIN_ROOT set, in the
// shell form and the exec form ("args"); its matcher "Task" selects the
// task tool.
func TestScriptPluginHooks(t *testing.T) {
	scripts(t)
	plugin, err := filepath.Abs("testdata/plugin")
	if err != nil {
		t.Fatal(err)
	}
	p := buildProject(t, map[string]string{"agentpool.yaml": `
hooks: {settings: ["` + plugin + `"]}
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: "Help."}}]
        - "lead done"
  helper: {model: {type: scripted, turns: ["helped"]}}
`})
	var firstRequest string
	res := p.runNode("lead", "go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	got, err := os.ReadFile(filepath.Join(p.dir, "plugin.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := "context.sh --root " + plugin + " env=" + plugin + "\n" + plugin + " Task helper\n"
	if string(got) != want {
		t.Errorf("plugin.log:\n%s\nwant:\n%s", got, want)
	}
	for _, m := range p.messages(res.SessionID) {
		if m.Synthetic {
			firstRequest += m.Text()
		}
	}
	if !strings.Contains(firstRequest, "PLUGIN CONTEXT: audits are on.") {
		t.Errorf("the plugin's SessionStart context did not reach the session: %q", firstRequest)
	}
}

// An async hook ("async": true) runs in the background: the run ends while
// it still runs; closing the registry waits for it, and its run is then in
// the session's log.
func TestScriptAsyncLogger(t *testing.T) {
	dir := scripts(t)
	h := cmdHook("sh " + dir + "/async_logger.sh")
	h["async"] = true
	p := newProject(t, `
workspace: .
agents:
  main:
    tools: [file_access]
    tool_approval: {"*": allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Write, args: {file_path: a.txt, content: "x"}}]
        - "done"
`, settingsJSON(t, map[string][]map[string]any{"PostToolUse": {group("Write", h)}}), nil)
	start := time.Now()
	res := p.runNode("main", "go")
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run ended %s: %v", res.Result.StopReason, res.Result.Err)
	}
	// The hook waits for the release file: the run could only end without
	// waiting for it.
	if _, err := os.Stat(filepath.Join(p.dir, "async.log")); err == nil {
		t.Fatal("the async hook finished before it was released")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run took %s", d)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.reg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(p.dir, "async.log"))
	if string(got) != "PostToolUse Write\n" {
		t.Errorf("async.log %q", got)
	}
	runs := p.hookRuns(res.SessionID)
	if len(runs) != 1 || runs[0]["async"] != true || runs[0]["hook_event"] != "PostToolUse" || runs[0]["decision"] != "none" {
		t.Errorf("hook runs %v", runs)
	}
}
