package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// humanManifest is AgentPool's human_interaction example with an offline
// assistant: it asks the person (model: input) through its worker tool,
// and answers with the tool's result.
const humanManifest = `agents:
  assistant:
    model:
      type: test
      call_tools: [ask_human]
      tool_args: {ask_human: {prompt: "Which colour should the button be?"}}
    workers: [human]
  human:
    model:
      type: input
      prompt_template: "Please respond to: {prompt}"
    system_prompt: You are the designer.
    description: "A human who can provide answers"
`

// TestRunAsksThePersonOfAnInputModel: on a terminal, the input model's
// turn is a question naming the agent by its path, with its system
// prompt and the prompt in its template; the typed line is the agent's
// answer, which the assistant gets as its tool's result.
func TestRunAsksThePersonOfAnInputModel(t *testing.T) {
	dir, manifest := newProject(t, humanManifest)
	r := startPTY(t, nil, "run", "-c", manifest, "--db", ":memory:", "--workspace", dir, "--agent", "assistant", "go")
	r.waitFor("Your response: ")
	if _, err := r.ptmx.Write([]byte("Blue, like the sky.\n")); err != nil {
		t.Fatal(err)
	}
	code, screen := r.wait(t)
	plain := strings.ReplaceAll(stripCSI(screen), "\r", "")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, plain)
	}
	want := "? you answer as assistant › human\n    system: You are the designer.\n  Please respond to: Which colour should the button be?\n  Your response: "
	if !strings.Contains(plain, want) {
		t.Errorf("the terminal never showed %q:\n%s", want, plain)
	}
	if out := r.stdout.String(); !strings.Contains(out, "Blue, like the sky.") {
		t.Errorf("answer %q does not hold the person's", out)
	}
}

// Without a terminal nobody can answer: the input model's turn fails,
// saying so, and the run fails.
func TestInputModelWithoutATerminal(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentpool.yaml")
	if err := os.WriteFile(manifest, []byte(humanManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, dir, "run", "-c", manifest, "--db", ":memory:", "--agent", "human", "Which colour?")
	if res.code == 0 || !strings.Contains(res.stderr, "a person answers for this agent (model: input), and nobody can be asked here: run it with agentpool run on a terminal") {
		t.Errorf("exit %d, stderr:\n%s", res.code, res.stderr)
	}
}
