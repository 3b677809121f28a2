package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const evalPool = `default_agent: lead
agents:
  lead:
    tools: [subagent, file_access]
    tool_approval: {Write: allow}
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Read, args: {file_path: notes/in.md}}]
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: "Help."}}]
        - '{"answer": 42}'
  helper: {model: {type: scripted, turns: ["helped"]}}
  judge: {model: {type: scripted, turns: ["PASS it gives a number"]}}
`

const evalSuite = `manifest: pool.yaml
cases:
  - name: answers
    prompt: "What is the answer?"
    files: {notes/in.md: "the answer is 42"}
    assert:
      - contains: "42"
      - json_schema: {type: object, required: [answer], properties: {answer: {type: integer}}}
      - tool_called: Read
      - child_spawned: helper
      - max_duration: 1m
      - judge: {agent: judge, criteria: "It gives a number"}
`

// agentpool eval runs a suite against its manifest, offline, with a
// judge agent; --compare runs it against a second manifest too, and a
// failed case is exit status 1 with JUnit and JSON written.
func TestEvalCommand(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "pool.yaml"), []byte(evalPool), 0o644)
	os.WriteFile(filepath.Join(dir, "other.yaml"), []byte(strings.Replace(evalPool, `'{"answer": 42}'`, `"I do not know"`, 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte(evalSuite), 0o644)

	r := runCLI(t, dir, "eval", "suite.yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "answers  ✓ pass  6/6") || !strings.Contains(r.stdout, "1 passed, 0 failed") {
		t.Fatalf("eval: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	junit, js := filepath.Join(dir, "j.xml"), filepath.Join(dir, "r.json")
	r = runCLI(t, dir, "eval", "suite.yaml", "--compare", "other.yaml", "--junit", junit, "--json", js)
	if r.code != 1 || !strings.Contains(r.stdout, "pool.yaml: 1 passed, 0 failed; other.yaml: 0 passed, 1 failed") ||
		!strings.Contains(r.stderr, "eval: 1 of 2 cases failed") {
		t.Fatalf("eval --compare: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(junit)
	if err != nil || !strings.Contains(string(data), `failures="1"`) || !strings.Contains(string(data), "the answer does not contain") {
		t.Errorf("junit %v:\n%s", err, data)
	}
	var doc struct{ Summary struct{ Passed, Failed int } }
	if data, err := os.ReadFile(js); err != nil || json.Unmarshal(data, &doc) != nil || doc.Summary.Passed != 1 || doc.Summary.Failed != 1 {
		t.Errorf("json %v: %+v", err, doc)
	}
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("cases:\n  - prompt: go\n    assert: [{contain: x}]\n"), 0o644)
	if r := runCLI(t, dir, "eval", "bad.yaml"); r.code != 1 || !strings.Contains(r.stderr, `bad.yaml:3: cases[0].assert[0]: line 3: unknown field "contain"`) {
		t.Errorf("a bad suite: exit %d\n%s", r.code, r.stderr)
	}
}
