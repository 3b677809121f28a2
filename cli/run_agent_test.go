package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const twoAgents = "agents:\n  assistant: {model: {type: test}}\n  helper: {model: {type: test, custom_output_text: helped}}\n"

func writeFileT(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunAgentPrompt: AgentPool's quick start (`agentpool run assistant
// "Hello!"` beside agents.yml) runs that agent of that manifest; a name the
// manifest lacks is an error naming the agents it has, never the demo.
func TestRunAgentPrompt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFileT(t, filepath.Join(dir, "agents.yml"), twoAgents)
	cases := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"assistant", "Hello!"}, 0, "Test model reply to: Hello!\n", ""},
		{[]string{"helper", "Hello", "there"}, 0, "helped\n", ""},
		// Not a node and more than two words: the prompt of the default agent.
		{[]string{"summarise", "this", "text"}, 0, "Test model reply to: summarise this text\n", ""},
		{[]string{"Hello!"}, 0, "Test model reply to: Hello!\n", ""},
		// --agent keeps working; every word is then the prompt.
		{[]string{"--agent", "helper", "assistant", "Hello!"}, 0, "helped\n", ""},
		{[]string{"nobody", "Hello!"}, 1, "", `agent "nobody" is not in agents.yml; it has: assistant, helper`},
		{[]string{"--agent", "nobody", "Hello!"}, 1, "", `agent "nobody" is not in agents.yml; it has: assistant, helper`},
	}
	for _, c := range cases {
		r := runCLI(t, dir, append([]string{"run", "--db", ":memory:"}, c.args...)...)
		if r.code != c.code || (c.stdout != "" && r.stdout != c.stdout) || !strings.Contains(r.stderr, c.stderr) {
			t.Errorf("run %q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr with %q",
				c.args, r.code, r.stdout, r.stderr, c.code, c.stdout, c.stderr)
		}
		if strings.Contains(r.stderr, "built-in demo") {
			t.Errorf("run %q with agents.yml mentions the demo: %q", c.args, r.stderr)
		}
	}

	// AGENT - reads the prompt from stdin.
	cmd := exec.Command(cliBinary(t), "run", "--db", ":memory:", "helper", "-")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader("from stdin\n")
	if out, err := cmd.Output(); err != nil || string(out) != "helped\n" {
		t.Errorf("run helper -: %v, stdout %q", err, out)
	}
}

// TestRunDiscovery: the manifest is found under each of its names; two of
// them are an error; with none, the built-in demo runs and says so, and an
// agent named is an error, not the demo.
func TestRunDiscovery(t *testing.T) {
	t.Parallel()
	for _, name := range manifestFiles {
		dir := t.TempDir()
		writeFileT(t, filepath.Join(dir, name), twoAgents)
		if r := runCLI(t, dir, "run", "--db", ":memory:", "helper", "hi"); r.code != 0 || r.stdout != "helped\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, r.code, r.stdout, r.stderr)
		}
	}

	both := t.TempDir()
	writeFileT(t, filepath.Join(both, "agentpool.yaml"), twoAgents)
	writeFileT(t, filepath.Join(both, "agents.yml"), twoAgents)
	r := runCLI(t, both, "run", "--db", ":memory:", "hi")
	if r.code != 1 || !strings.Contains(r.stderr, "agentpool.yaml and agents.yml are all here: name the manifest to use with -c") {
		t.Errorf("two manifests: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, both, "run", "--db", ":memory:", "-c", "agents.yml", "helper", "hi")
	if r.code != 0 || r.stdout != "helped\n" {
		t.Errorf("two manifests and -c: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	none := t.TempDir()
	r = runCLI(t, none, "run", "--db", ":memory:", "--output", "jsonl", "hi")
	if r.code != 0 || !strings.Contains(r.stderr, "no manifest here (agentpool.yaml, agentpool.yml, agents.yml, agents.yaml) and no -c: running the built-in demo") {
		t.Errorf("no manifest: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, none, "run", "--db", ":memory:", "assistant", "Hello!")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, `agent "assistant" is not in the built-in demo (no manifest here: agentpool.yaml, agentpool.yml, agents.yml, agents.yaml; name one with -c); it has: orchestrator,`) {
		t.Errorf("an agent without a manifest: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
