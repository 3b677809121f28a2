package cli

import (
	"strings"
	"testing"
)

// failingManifest: lead's Write asks for approval (nobody to ask: denied),
// its Bash is denied by policy, its Read fails, and its helper's Read fails
// too; the second delegation is refused by max_spawns.
const failingManifest = `
agents:
  lead:
    tools: [file_access, execution, subagent]
    tool_approval: {Bash: deny}
    model:
      type: scripted
      turns:
        - tool_calls:
            - {name: Write, args: {file_path: a.md, content: hi}}
            - {name: Bash, args: {command: "echo hi"}}
            - {name: Read, args: {file_path: missing.txt}}
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: one}}]
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: two}}]
        - "lead done"
  helper:
    tools: [file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Read, args: {file_path: gone.txt}}]
        - "helped"
limits: {max_spawns: 1}
`

// TestRunShowsFailures: run's progress shows a ✗ line, with where in the
// tree and why, for every denied tool call (by the approval broker or by
// a policy), every failed one and every refused spawn, each once; the
// broker's denial and the refusal make the exit status 3 and are in the
// last line.
func TestRunShowsFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"agentpool.yaml": failingManifest})
	r := runCLI(t, dir, "run", "--db", ":memory:", "go")
	if r.code != exitIncomplete || strings.TrimSpace(r.stdout) != "lead done" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"\n✗ lead: Write a.md denied: Write needs approval (the tool_approval policy of agent lead asks before Write) and nobody was asked",
		"\n✗ lead: echo hi denied: the tool_approval policy of agent lead denies Bash\n",
		"\n✗ lead: Read missing.txt failed: File does not exist: ",
		"\n✗ lead › helper: Read gone.txt failed: File does not exist: ",
		"\n✗ lead: spawn of helper refused: cannot spawn helper: spawn budget of the run exhausted (max_spawns 1)\n",
		// The policy's denial is shown, not counted.
		"\nagentpool: run completed, but 1 spawn was refused (max_spawns 1) and 1 tool call was denied approval (Write by lead)\n",
	} {
		if strings.Count(r.stderr, want) != 1 {
			t.Errorf("stderr has not once %q:\n%s", want, r.stderr)
		}
	}
	if n := strings.Count(r.stderr, "✗ "); n != 5 {
		t.Errorf("%d ✗ lines, want 5 (the refused delegation's failed call is the refusal's line):\n%s", n, r.stderr)
	}

	// On a terminal: the same lines, above the tree.
	p := startPTY(t, nil, "run", "-c", dir+"/agentpool.yaml", "--db", ":memory:", "--approve", "deny", "go")
	code, screen := p.wait(t)
	plain := stripCSI(screen)
	if code != exitIncomplete {
		t.Fatalf("on a terminal: exit %d:\n%s", code, plain)
	}
	for _, want := range []string{
		"✗ lead: echo hi denied: the tool_approval policy of agent lead denies Bash",
		"✗ lead › helper: Read gone.txt failed: File does not exist: ",
		"✗ lead: spawn of helper refused: ",
	} {
		if !strings.Contains(plain, want) {
			t.Errorf("on a terminal, no %q:\n%s", want, plain)
		}
	}
}

// A long error is cut, on one line, its controls shown.
func TestShortReason(t *testing.T) {
	got := shortReason("exit 1:\n\x1b[31mred\x1b[0m " + strings.Repeat("x", 300))
	if strings.ContainsAny(got, "\n\x1b") || !strings.HasSuffix(got, "…") || len([]rune(got)) != maxReason+1 {
		t.Errorf("%q", got)
	}
}
