package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `agentpool validate` on a manifest whose ACP agent's program is not
// installed fails, naming the manifest, the program and the package to
// install, for each preset (type: claude_code and provider: registry
// included): not an unknown-field error.
func TestValidateNamesTheMissingACPPackage(t *testing.T) {
	t.Parallel()
	cases := []struct{ agent, command, install string }{
		{"type: acp\n    provider: claude", "claude-agent-acp", "npm install -g @agentclientprotocol/claude-agent-acp"},
		{"type: claude_code", "claude-agent-acp", "npm install -g @agentclientprotocol/claude-agent-acp"},
		{"type: acp\n    provider: codex", "codex-acp", "npm install -g @zed-industries/codex-acp"},
		{"type: acp\n    provider: registry\n    registry_id: codex-acp", "codex-acp", "npm install -g @zed-industries/codex-acp"},
		{"type: acp\n    provider: opencode", "opencode", "npm install -g opencode-ai"},
		{"type: acp\n    provider: goose", "goose", "goose CLI"},
		{"type: acp\n    provider: gemini", "gemini", "npm install -g @google/gemini-cli"},
		{"type: acp\n    provider: custom\n    command: my-acp-agent", "my-acp-agent", ""},
	}
	emptyPath := t.TempDir() // PATH: none of the programs
	for _, c := range cases {
		dir := t.TempDir()
		manifest := filepath.Join(dir, "agentpool.yaml")
		yaml := "agents:\n  ext:\n    " + c.agent + "\n"
		if err := os.WriteFile(manifest, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(cliBinary(t), "validate", manifest)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+emptyPath, "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("%q: validate exited with %v, want 1\nstdout: %s\nstderr: %s", c.agent, err, stdout.String(), stderr.String())
			continue
		}
		msg := stderr.String()
		for _, want := range []string{manifest, `"` + c.command + `" is not in PATH`, c.install} {
			if !strings.Contains(msg, want) {
				t.Errorf("%q: the error %q lacks %q", c.agent, msg, want)
			}
		}
		if strings.Contains(msg, "unknown") {
			t.Errorf("%q: %s", c.agent, msg)
		}
	}
}
