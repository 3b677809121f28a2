package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tool given as Python code is skipped: validate lists the warning, and
// run prints it on stderr and runs the agent without the tool.
func TestPythonToolSkippedWithAWarning(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agents.yml")
	src := "agents:\n  lister:\n    model: {type: test, call_tools: [], custom_output_text: Listed.}\n    tools:\n      - type: import\n        import_path: os.listdir\n        name: list_files\n      - file_access\n"
	if err := os.WriteFile(manifest, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	const warning = `agents.yml:6: agents.lister.tools[0]: skipped: tool "list_files" is the Python function os.listdir, which agentpool cannot load or run; agent "lister" runs without it`
	v := runCLI(t, dir, "validate", "agents.yml")
	if v.code != 0 || !strings.Contains(v.stdout+v.stderr, warning) {
		t.Errorf("validate: exit %d\nstdout:\n%s\nstderr:\n%s", v.code, v.stdout, v.stderr)
	}
	r := runCLI(t, dir, "run", "-c", "agents.yml", "--db", ":memory:", "--workspace", dir, "--agent", "lister", "go")
	// The log line quotes its message (slog's text format).
	if r.code != 0 || !strings.Contains(strings.ReplaceAll(r.stderr, `\"`, `"`), warning) || !strings.Contains(r.stdout, "Listed.") {
		t.Errorf("run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
