//go:build unix

package opencode

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestVcsHeadNamedPipe: a .git/HEAD that is a named pipe (a hostile
// workspace) makes GET /vcs answer "no branch" at once; reading it would
// wait for a writer forever. A regular HEAD still names its branch.
func TestVcsHeadNamedPipe(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	head := filepath.Join(dir, ".git", "HEAD")
	if err := syscall.Mkfifo(head, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	if got := gitBranch(dir); got != "" {
		t.Fatalf("gitBranch over a named pipe = %q, want none", got)
	}
	if err := os.Remove(head); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(head, []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := gitBranch(dir); got != "main" {
		t.Fatalf("gitBranch = %q, want main", got)
	}
}
