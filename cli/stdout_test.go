package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunStdoutClosed: a reader that goes away (`agentpool run | head`)
// cancels the run instead of killing agentpool with SIGPIPE: the session is
// stored aborted, the user is told on stderr, and the exit code is a
// SIGPIPE death's.
func TestRunStdoutClosed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(`agents:
  a:
    model:
      type: scripted
      turns:
        - {text: "never shown", delay: 1m}
`), 0o644)
	db := filepath.Join(dir, "s.db")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first line
	cmd := exec.Command(cliBinary(t), "run", "--db", db, "--output", "jsonl", "go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitStdoutClosed {
		t.Fatalf("exit: %v, want code %d (stderr: %s)", err, exitStdoutClosed, stderr.String())
	}
	if !strings.Contains(stderr.String(), "standard output closed") {
		t.Errorf("stderr does not say why the run stopped: %q", stderr.String())
	}
	list := runCLI(t, dir, "sessions", "list", "--db", db)
	if list.code != 0 || !strings.Contains(list.stdout, "aborted") {
		t.Errorf("the session is not stored aborted: %+v", list)
	}
}
