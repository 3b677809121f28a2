package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const replayPool = `default_agent: lead
hooks: {settings: hooks.json}
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

// agentpool replay re-runs a run stored in SQLite with its recorded
// answers: reproduced, exit 0; with the file its tools read changed, the
// two reads are reported, exit 4, and so they are when a hook now blocks
// them; with --model the prompts run against
// another model, answers side by side.
func TestReplayCommand(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pool.yaml"), []byte(replayPool), 0o644)
	os.MkdirAll(filepath.Join(dir, "notes"), 0o755)
	notes := filepath.Join(dir, "notes", "in.md")
	os.WriteFile(notes, []byte("the answer is 42"), 0o644)
	db := filepath.Join(t.TempDir(), "rec.db")
	// The hook blocks every Read once the marker exists (never while
	// recording): a hook that now behaves differently.
	marker := filepath.Join(t.TempDir(), "block")
	hooks := `{"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command",
		"command": "if [ -e '` + marker + `' ]; then echo 'reads are off today' >&2; exit 2; fi"}]}]}}`
	os.WriteFile(filepath.Join(dir, "hooks.json"), []byte(hooks), 0o644)

	if r := runCLI(t, dir, "run", "-c", "pool.yaml", "--db", db, "What is the answer?"); r.code != 0 || !strings.Contains(r.stdout, "The answer is 42.") {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r := runCLI(t, dir, "sessions", "list", "--roots", "--json", "--db", db)
	var roots []struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &roots); err != nil || len(roots) != 1 {
		t.Fatalf("sessions list: %v\n%s", err, r.stdout)
	}
	id := roots[0].ID

	r = runCLI(t, dir, "replay", id, "-c", "pool.yaml", "--db", db)
	if r.code != 0 || !strings.Contains(r.stdout, "✓ reproduced: no divergence") ||
		!strings.Contains(r.stdout, "compared 16 steps of 4 sessions (4 replayed), 5 of 5 recorded model answers used") ||
		!strings.Contains(r.stdout, "  now       completed · The answer is 42.") {
		t.Fatalf("replay: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(notes); string(b) != "the answer is 42" {
		t.Errorf("the replay changed the workspace: %q", b)
	}

	os.WriteFile(notes, []byte("the answer is 41"), 0o644)
	r = runCLI(t, dir, "replay", id[:len(id)-4], "-c", "pool.yaml", "--db", db, "--json")
	if r.code != exitDiverged || !strings.Contains(r.stderr, "replay: 2 divergences from session "+id) {
		t.Fatalf("replay of a changed file: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var rep replayReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Result == nil || rep.Reproduced {
		t.Fatalf("replay --json: %v\n%s", err, r.stdout)
	}
	agents := map[string]bool{}
	for _, d := range rep.Result.Divergences {
		if d.Kind != "tool_result" || d.Turn != 1 || d.Key != "call 1 Read" || d.Recorded == nil || d.Now == nil ||
			!strings.Contains(*d.Recorded, "the answer is 42") || !strings.Contains(*d.Now, "the answer is 41") {
			t.Errorf("divergence %+v", d)
		}
		agents[d.Agent] = true
	}
	if len(rep.Result.Divergences) != 2 || !agents["lead"] || !agents["helper"] {
		t.Errorf("divergences %+v", rep.Result.Divergences)
	}

	os.WriteFile(notes, []byte("the answer is 42"), 0o644)
	os.WriteFile(marker, nil, 0o644)
	r = runCLI(t, dir, "replay", id, "-c", "pool.yaml", "--db", db)
	if r.code != exitDiverged || strings.Count(r.stdout, "tool_result") != 2 || strings.Count(r.stdout, "reads are off today") != 2 {
		t.Fatalf("replay with a hook that blocks: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	os.Remove(marker)

	r = runCLI(t, dir, "replay", id, "-c", "pool.yaml", "--db", db, "--model", "test", "--json")
	if r.code != 0 {
		t.Fatalf("replay --model: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rep = replayReport{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Mode != "model" || rep.Result != nil || len(rep.Runs) != 1 {
		t.Fatalf("replay --model --json: %v\n%s", err, r.stdout)
	}
	run := rep.Runs[0]
	if run.Prompt != "What is the answer?" || run.Recorded == nil || run.Recorded.Answer != "The answer is 42." ||
		run.Now.Stop != "completed" || run.Now.Answer == "" || run.Now.Answer == run.Recorded.Answer {
		t.Errorf("replay --model run %+v recorded %+v", run, run.Recorded)
	}

	if r := runCLI(t, dir, "replay", "ses_nope", "-c", "pool.yaml", "--db", db); r.code != 1 || !strings.Contains(r.stderr, "session ses_nope: session not found") {
		t.Errorf("an unknown session: exit %d\n%s", r.code, r.stderr)
	}
}
