package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// logHookTo is a command hook that keeps its payload in DIR/ev (one file
// per run), read back by hookEvents.
func logHookTo(dir string) string {
	return `{"type": "command", "command": "mkdir -p '` + dir + `/ev'; cat > \"$(mktemp '` + dir + `/ev/XXXXXXXX')\""}`
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runIn runs the CLI in dir with HOME set to home (the last HOME of the
// environment wins) and no CLAUDE_CONFIG_DIR.
func runIn(t *testing.T, dir, home string, args ...string) cliResult {
	t.Helper()
	return runCLIEnv(t, dir, []string{"HOME=" + home, "CLAUDE_CONFIG_DIR="}, args...)
}

// A Claude Code project with nothing but .claude/settings.json: its hooks
// run under `agentpool run` (the built-in demo, whose orchestrator calls
// Task), with the user's and the local file's hooks, as Claude Code
// merges them; --setting-sources leaves out what it does not name.
func TestRunPicksUpClaudeSettings(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, ".claude", "settings.json"),
		`{"permissions": {"allow": ["Read"]}, "hooks": {"PreToolUse": [{"matcher": "Task", "hooks": [`+logHookTo(dir)+`]}]}}`)
	writeFile(t, filepath.Join(dir, ".claude", "settings.local.json"),
		`{"hooks": {"Stop": [{"hooks": [`+logHookTo(dir)+`]}]}}`)
	writeFile(t, filepath.Join(home, ".claude", "settings.json"),
		`{"hooks": {"UserPromptSubmit": [{"hooks": [`+logHookTo(dir)+`]}]}}`)

	r := runIn(t, dir, home, "run", "--fast", "--db", ":memory:", "hello")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	evs := hookEvents(t, dir)
	if got := counts(evs); got != "PreToolUse=1 Stop=1 UserPromptSubmit=1" {
		t.Fatalf("hooks run: %s, want PreToolUse, Stop and UserPromptSubmit once (stderr %s)", got, r.stderr)
	}
	if p := evs["PreToolUse"][0]; p["tool_name"] != "Task" || p["cwd"] != dir {
		t.Errorf("PreToolUse payload = %v", p)
	}
	if strings.Contains(r.stderr, "agentpool reads only the hooks") {
		t.Errorf("permissions warned about although they are applied: %s", r.stderr)
	}

	os.RemoveAll(filepath.Join(dir, "ev"))
	r = runIn(t, dir, home, "run", "--fast", "--db", ":memory:", "--setting-sources", "project", "hello")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := counts(hookEvents(t, dir)); got != "PreToolUse=1" {
		t.Errorf("--setting-sources project: hooks run %s, want the project's only", got)
	}
	r = runIn(t, dir, home, "run", "--setting-sources", "user,team", "hello")
	if r.code == 0 || !strings.Contains(r.stderr, `unknown source "team"`) {
		t.Errorf("bad --setting-sources: exit %d, %s", r.code, r.stderr)
	}
}

// .claude/agents/*.md become agents the root reaches with its task tool;
// the project's wins over the user's of the same name.
func TestRunClaudeAgents(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "agentpool.yaml"), `default_model: {type: test, custom_output_text: "reviewed by the file agent"}
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: reviewer, prompt: "Review."}}]
        - "lead done"
`)
	writeFile(t, filepath.Join(dir, ".claude", "agents", "reviewer.md"), "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep, WebSearch\nmodel: sonnet\n---\nYou review code.\n")
	writeFile(t, filepath.Join(home, ".claude", "agents", "reviewer.md"), "---\nname: reviewer\ndescription: The user's.\n---\nbody\n")
	writeFile(t, filepath.Join(home, ".claude", "agents", "writer.md"), "---\nname: writer\ndescription: Writes.\n---\nbody\n")
	r := runIn(t, dir, home, "run", "--db", ":memory:", "--output", "jsonl", "go")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "reviewed by the file agent") {
		t.Errorf("the reviewer's answer is not in the stream:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "agentpool has no WebSearch") {
		t.Errorf("no warning about WebSearch: %s", r.stderr)
	}

	writeFile(t, filepath.Join(dir, ".claude", "agents", "broken.md"), "---\nname: broken\ndescription: [x\n---\n")
	r = runIn(t, dir, home, "run", "--db", ":memory:", "go")
	if r.code == 0 || !strings.Contains(r.stderr, filepath.Join(dir, ".claude", "agents", "broken.md")+":3: invalid YAML") {
		t.Errorf("broken agent file: exit %d, %s", r.code, r.stderr)
	}
}

// Plugins: --plugin-dir and enabledPlugins (through the user's
// installed_plugins.json) bring their hooks and agents; a manifest's
// hooks.settings may name a plugin directory.
func TestRunClaudePlugins(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	plugin := func(root, agent string) {
		writeFile(t, filepath.Join(root, ".claude-plugin", "plugin.json"), `{"name": "`+filepath.Base(root)+`"}`)
		// The command differs by plugin: identical commands run once.
		hook := strings.Replace(logHookTo(dir), `"command": "`, `"command": ": `+agent+`; `, 1)
		writeFile(t, filepath.Join(root, "hooks", "hooks.json"), `{"hooks": {"PreToolUse": [{"hooks": [`+hook+`]}]}}`)
		writeFile(t, filepath.Join(root, "agents", agent+".md"), "---\nname: "+agent+"\ndescription: A plugin's agent.\ntools: Read\n---\nbody\n")
	}
	flagPlugin := filepath.Join(t.TempDir(), "flagged")
	plugin(flagPlugin, "pa")
	installed := filepath.Join(home, ".claude", "plugins", "cache", "mk", "audit", "1.0.0")
	plugin(installed, "pb")
	writeFile(t, filepath.Join(home, ".claude", "plugins", "installed_plugins.json"),
		`{"version": 2, "plugins": {"audit@mk": [{"scope": "user", "installPath": "`+installed+`"}]}}`)
	writeFile(t, filepath.Join(dir, ".claude", "settings.json"), `{"enabledPlugins": {"audit@mk": true, "gone@mk": false}}`)
	writeFile(t, filepath.Join(dir, "agentpool.yaml"), `hooks: {settings: [`+flagPlugin+`]}
default_model: {type: test, custom_output_text: "plugin agent answered"}
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: pa, prompt: "a"}}, {name: task, args: {agent_or_team: pb, prompt: "b"}}]
        - "lead done"
`)
	r := runIn(t, dir, home, "run", "--db", ":memory:", "--plugin-dir", flagPlugin, "--output", "jsonl", "go")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if n := strings.Count(r.stdout, "plugin agent answered"); n < 2 {
		t.Errorf("plugin agents answered %d times, want both:\n%s", n, r.stdout)
	}
	// Two task calls in the root, one Read each in pa and pb (the test
	// model calls every tool): PreToolUse of each plugin's hook for each.
	if got := len(hookEvents(t, dir)["PreToolUse"]); got != 8 {
		t.Errorf("PreToolUse hooks ran %d times, want 8 (2 plugins x 4 tool calls): %s", got, r.stderr)
	}
}

// doctor lists what run would use, and from where, and exits 1 when
// something is broken.
func TestDoctor(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, ".claude", "settings.json"),
		`{"permissions": {"deny": ["Bash"]}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}`)
	writeFile(t, filepath.Join(home, ".claude", "settings.json"), `{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "false"}]}]}}`)
	writeFile(t, filepath.Join(dir, ".claude", "agents", "rev.md"), "---\nname: rev\ndescription: Reviews.\ntools: Read, WebSearch\n---\nbody\n")
	writeFile(t, filepath.Join(dir, ".claude", "commands", "fix.md"), "---\ndescription: Fixes an issue.\n---\nFix issue $ARGUMENTS.\n")
	r := runIn(t, dir, home, "doctor")
	if r.code != 0 {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"user     " + filepath.Join(home, ".claude", "settings.json") + " (found)",
		"project  " + filepath.Join(dir, ".claude", "settings.json") + " (found)",
		"local    " + filepath.Join(dir, ".claude", "settings.local.json") + " (absent)",
		"PreToolUse         2 hooks (" + filepath.Join(home, ".claude", "settings.json") + ", " + filepath.Join(dir, ".claude", "settings.json") + ")",
		"deny  Bash (" + filepath.Join(dir, ".claude", "settings.json") + ")",
		"rev                  project " + filepath.Join(dir, ".claude", "agents", "rev.md"),
		"agentpool has no WebSearch",
		"/fix                 project " + filepath.Join(dir, ".claude", "commands", "fix.md") + " Fixes an issue.",
		"builds: 5 agents, 1 team; a run starts with orchestrator",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor's report lacks %q:\n%s", want, r.stdout)
		}
	}

	writeFile(t, filepath.Join(dir, ".claude", "settings.local.json"), `{"enabledPlugins": {"gone@market": true}}`)
	writeFile(t, filepath.Join(dir, ".claude", "agents", "bad.md"), "---\nname: bad\n---\nno description\n")
	r = runIn(t, dir, home, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "bad.md:2: description: required") {
		t.Errorf("broken agent file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	os.Remove(filepath.Join(dir, ".claude", "agents", "bad.md"))
	r = runIn(t, dir, home, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "✗ plugin gone@market is enabled in") || !strings.Contains(r.stderr, "doctor: 1 problem") {
		t.Errorf("plugin not installed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// run "/name args" runs the Claude Code command name with $ARGUMENTS
// replaced; a prompt that names no command is the prompt.
func TestRunClaudeCommand(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "agentpool.yaml"), "agents:\n  echo: {model: {type: scripted, turns: [\"ok\"]}}\n")
	writeFile(t, filepath.Join(dir, ".claude", "commands", "fix.md"), "---\ndescription: Fixes an issue.\n---\nFix issue $ARGUMENTS carefully.\n")
	writeFile(t, filepath.Join(dir, ".claude", "settings.json"), `{"hooks": {"UserPromptSubmit": [{"hooks": [`+logHookTo(dir)+`]}]}}`)
	for prompt, want := range map[string]string{
		"/fix 42 now":    "Fix issue 42 now carefully.",
		"/unknown thing": "/unknown thing",
	} {
		os.RemoveAll(filepath.Join(dir, "ev"))
		r := runIn(t, dir, home, "run", "--db", ":memory:", prompt)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		evs := hookEvents(t, dir)["UserPromptSubmit"]
		if len(evs) != 1 || evs[0]["prompt"] != want {
			t.Errorf("%q: the prompt submitted = %v, want %q", prompt, evs, want)
		}
	}
}
