package checkpoint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentpool/agentpool/session"
)

// A file captured as absent is removed when it exists, and passed over
// when it is absent again (a command's temporary file, made and gone
// between two scans): the rewind reports only what it changed.
func TestRestoreSkipsWhatIsGoneAgain(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "made.txt"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := restoreAll([]session.Capture{
		{SessionID: "ses_1", Root: dir, Path: "made.txt"},
		{SessionID: "ses_1", Root: dir, Path: "sedTMP123"},
	}, nil)
	if len(got) != 1 || got[0].Path != "made.txt" || got[0].Action != "removed" || got[0].Err != "" {
		t.Fatalf("restoreAll = %+v, want made.txt removed alone", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "made.txt")); !os.IsNotExist(err) {
		t.Errorf("made.txt still there: %v", err)
	}
}
