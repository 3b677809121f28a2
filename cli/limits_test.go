package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
)

// writeFiles writes name -> content into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// customEvents returns the event_data of the custom events of type typ in
// a JSONL stream, wrapped or not.
func customEvents(t *testing.T, stdout, typ string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range decodeJSONL(t, stdout) {
		if _, inner := event.Unwrap("", e); inner != nil {
			if c, ok := inner.(event.Custom); ok && c.EventType == typ {
				out = append(out, c.EventData)
			}
		}
	}
	return out
}

// validate and run check the hook settings files a manifest names: a
// missing file at the manifest's line, a command given as a list at the settings
// file's line.
func TestValidateChecksHookSettings(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agentpool.yaml": "agents:\n  solo: {model: test}\nhooks:\n  settings:\n    - hooks.json\n    - missing.json\n",
		"hooks.json":     `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`,
		"exec.yaml":      "agents:\n  solo: {model: test}\nhooks: {settings: exec.json}\n",
		"exec.json": `{"hooks": {
  "PreToolUse": [
    {"matcher": "Bash", "hooks": [
      {"type": "command", "command": ["./guard.sh", "--strict"]}
    ]}
  ]
}}`,
	})
	for _, args := range [][]string{{"validate", "agentpool.yaml"}, {"run", "-c", "agentpool.yaml", "--db", ":memory:", "hi"}} {
		r := runCLI(t, dir, args...)
		want := `agentpool.yaml:6: hooks.settings[1]: settings file "missing.json" does not exist`
		if r.code != 1 || !strings.Contains(r.stderr, want) || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
	for _, args := range [][]string{{"validate", "exec.yaml"}, {"run", "-c", "exec.yaml", "--db", ":memory:", "hi"}} {
		r := runCLI(t, dir, args...)
		want := `exec.json:4: hooks.PreToolUse[0].hooks[0].command: expected a string, got JSON array` // the argument list goes in "args"
		if r.code != 1 || !strings.Contains(r.stderr, want) || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
}

// A declared team too large for max_spawns is refused up front by validate
// and run alike, naming the limit and the line; nothing runs.
func TestTeamOverSpawnBudgetRefused(t *testing.T) {
	dir := t.TempDir()
	members := strings.TrimSuffix(strings.Repeat("w, ", 1001), ", ")
	writeFiles(t, dir, map[string]string{
		"big.yaml": "default_agent: big\nagents:\n  w: {model: test}\nteams:\n  big:\n    mode: parallel\n    members: [" + members + "]\n",
	})
	want := `big.yaml:5: teams.big: team "big" needs 1002 spawns per run (itself and 1001 members, counting members of member teams), more than limits.max_spawns (1000)`
	for _, args := range [][]string{{"validate", "big.yaml"}, {"run", "-c", "big.yaml", "--db", ":memory:", "--output", "jsonl", "go"}} {
		r := runCLI(t, dir, args...)
		if r.code != 1 || !strings.Contains(r.stderr, want) || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
}

// A spawn refused at run time is a spawn_refused event in the stream, a
// warning on stderr, and exit code 3 (the run completed, some work did
// not happen).
func TestRunReportsRefusedSpawns(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"agentpool.yaml": `
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: one}}]
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: two}}]
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: three}}]
        - "lead done"
  helper: {model: {type: test, custom_output_text: helped}}
limits: {max_spawns: 2}
`})
	r := runCLI(t, dir, "run", "--db", ":memory:", "--output", "jsonl", "go")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3; stderr %q", r.code, r.stderr)
	}
	got := customEvents(t, r.stdout, "spawn_refused")
	if len(got) != 1 || got[0]["limit"] != "max_spawns" || got[0]["node"] != "helper" {
		t.Errorf("spawn_refused events: %v", got)
	}
	for _, want := range []string{
		"spawn budget of the run exhausted", // the runtime's warning
		"agentpool: run completed, but 1 spawn was refused (max_spawns 2)",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	r = runCLI(t, dir, "run", "--db", ":memory:", "go")
	if r.code != 3 || strings.TrimSpace(r.stdout) != "lead done" {
		t.Errorf("text output: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A failed team member is no success: a parallel team reports it and the
// run exits 3; with require_all the team fails and the run exits 1.
func TestRunFailedMemberExitCode(t *testing.T) {
	dir := t.TempDir()
	team := `
agents:
  good: {model: {type: test, custom_output_text: fine}}
  bad: {model: {type: scripted, turns: [{error: provider exploded}]}}
teams:
  squad:
    mode: parallel
    members: [good, bad]
`
	writeFiles(t, dir, map[string]string{
		"lenient.yaml": "default_agent: squad\n" + team,
		"strict.yaml":  "default_agent: squad\n" + team + "    require_all: true\n",
	})
	r := runCLI(t, dir, "run", "-c", "lenient.yaml", "--db", ":memory:", "go")
	if r.code != 3 || !strings.Contains(r.stderr, "agentpool: run completed, but 1 child session failed (bad)") || !strings.Contains(r.stdout, "[good]\nfine") {
		t.Errorf("lenient: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, dir, "run", "-c", "strict.yaml", "--db", ":memory:", "go")
	if r.code != 1 || !strings.Contains(r.stderr, "agentpool: run failed: 1 of 2 members failed: bad (require_all)") {
		t.Errorf("strict: exit %d, stderr %q", r.code, r.stderr)
	}
}

// run --session continues with the session's own agent, whatever the
// manifest's default; another --agent, or a manifest without that agent,
// is refused.
func TestRunSessionKeepsItsAgent(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	writeFiles(t, dir, map[string]string{
		"one.yaml":   "agents:\n  alpha: {model: {type: test, custom_output_text: alpha here}}\n",
		"two.yaml":   "agents:\n  beta: {model: {type: test, custom_output_text: beta here}}\n",
		"three.yaml": "default_agent: beta\nagents:\n  beta: {model: {type: test, custom_output_text: beta here}}\n  alpha: {model: {type: test, custom_output_text: alpha again}}\n",
	})
	r := runCLI(t, dir, "run", "-c", "one.yaml", "--db", db, "--output", "jsonl", "hi")
	if r.code != 0 {
		t.Fatalf("first run: exit %d: %s", r.code, r.stderr)
	}
	sid := decodeJSONL(t, r.stdout)[0].(event.RunStarted).SessionID

	r = runCLI(t, dir, "run", "-c", "two.yaml", "--db", db, "--session", sid, "again")
	if want := `session ` + sid + ` was run by agent "alpha", which two.yaml does not define`; r.code != 1 || !strings.Contains(r.stderr, want) || r.stdout != "" {
		t.Errorf("manifest without the agent: exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
	}
	r = runCLI(t, dir, "run", "-c", "three.yaml", "--db", db, "--session", sid, "--agent", "beta", "again")
	if want := `session ` + sid + ` belongs to agent "alpha"; --agent beta would switch agents`; r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("--agent beta: exit %d, stderr %q; want %q", r.code, r.stderr, want)
	}
	for _, args := range [][]string{{}, {"--agent", "alpha"}} {
		r = runCLI(t, dir, append([]string{"run", "-c", "three.yaml", "--db", db, "--session", sid, "--output", "jsonl"}, append(args, "again")...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		if rs := decodeJSONL(t, r.stdout)[0].(event.RunStarted); rs.SessionID != sid || rs.AgentName != "alpha" {
			t.Errorf("%v: the continued run is %+v, want agent alpha in %s", args, rs, sid)
		}
	}
}

// Continuing a child session deep in its tree says, up front and in the
// refusal, that max_depth counts from the tree's root.
func TestRunContinueDeepSession(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	writeFiles(t, dir, map[string]string{"agentpool.yaml": `
agents:
  deep:
    tools: [subagent]
    model:
      type: test
      call_tools: [task]
      tool_args: {task: {agent_or_team: deep, prompt: deeper}}
      custom_output_text: deep done
limits: {max_depth: 2}
`})
	r := runCLI(t, dir, "run", "--db", db, "--output", "jsonl", "go")
	if r.code != 3 {
		t.Fatalf("first run: exit %d (want 3: the spawn at depth 3 was refused): %s", r.code, r.stderr)
	}
	var sessions []struct {
		ID    string `json:"id"`
		Depth int    `json:"depth"`
	}
	if err := json.Unmarshal([]byte(runCLI(t, dir, "sessions", "list", "--db", db, "--json").stdout), &sessions); err != nil {
		t.Fatal(err)
	}
	deepest := ""
	for _, s := range sessions {
		if s.Depth == 2 {
			deepest = s.ID
		}
	}
	if deepest == "" {
		t.Fatalf("no session at depth 2: %+v", sessions)
	}
	r = runCLI(t, dir, "run", "--db", db, "--output", "jsonl", "--session", deepest, "again")
	if r.code != 3 {
		t.Fatalf("continued run: exit %d, want 3: %s", r.code, r.stderr)
	}
	notice := "agentpool: session " + deepest + " is at depth 2 of its tree and max_depth (2) counts from the tree's root: this run cannot delegate"
	if !strings.Contains(r.stderr, notice) {
		t.Errorf("stderr lacks the notice %q:\n%s", notice, r.stderr)
	}
	got := customEvents(t, r.stdout, "spawn_refused")
	if len(got) != 1 || !strings.Contains(got[0]["error"].(string), "this run continues a session at depth 2 of its tree") {
		t.Errorf("spawn_refused: %v", got)
	}
}

// validate and run (which reads ./agentpool.yaml when no -c is given)
// refuse a manifest of nested YAML aliases at once, naming the line and
// the bound; it used to grow without end (760 MB in 20 s, killed).
func TestYAMLAliasBombCLI(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("x-bomb:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	prev := "a"
	for _, c := range "bcdefghi" {
		bomb.WriteString("  " + string(c) + ": &" + string(c) + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+", ", 9), ", ") + "]\n")
		prev = string(c)
	}
	bomb.WriteString("agents:\n  w:\n    model: {type: test, tool_args: {t: {k: *i}}}\n")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"agentpool.yaml": bomb.String()})
	const want = "agentpool.yaml:7: too many YAML alias expansions (more than 100000 nodes reached through aliases)"
	for _, args := range [][]string{{"validate", "agentpool.yaml"}, {"run", "--db", ":memory:", "hi"}} {
		r := runCLI(t, dir, args...)
		if r.code != 1 || !strings.Contains(r.stderr, want) || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
}
