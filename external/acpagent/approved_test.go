package acpagent

import (
	"os"
	"path/filepath"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// A granted edit stands in for the read before write only for the
// approved change of the file as it is now, once: other content, a file
// changed since the approval, another file or a second write are not
// approved.
func TestApprovedEditIsTheApprovedChangeOnly(t *testing.T) {
	dir := t.TempDir()
	n, err := New(Config{Name: "agent", Command: os.Args[0], Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "f.txt")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	diff := "Index: " + file + "\n===\n--- " + file + "\n+++ " + file + "\n@@ -1,2 +1,2 @@\n-old\n+new\n kept\n"
	grant := func(tr *turn) {
		tr.grant(acp.ToolCallUpdate{RawInput: map[string]any{"filepath": file, "diff": diff}})
	}

	tr := &turn{n: n}
	write("old\nkept\n")
	if tr.takeApproved(file, "new\nkept\n") {
		t.Error("approved with no grant")
	}
	grant(tr)
	if tr.takeApproved(filepath.Join(dir, "other.txt"), "new\nkept\n") || tr.takeApproved(file, "other\nkept\n") {
		t.Error("approved another file or other content")
	}
	write("changed\nkept\n")
	if tr.takeApproved(file, "new\nkept\n") {
		t.Error("approved over a file changed since the approval")
	}
	write("old\nkept\n")
	if !tr.takeApproved(file, "new\nkept\n") {
		t.Error("the approved change is refused")
	}
	if tr.takeApproved(file, "new\nkept\n") {
		t.Error("one grant approved two writes")
	}

	tr = &turn{n: n}
	grant(tr)
	write("new\nkept\n") // the agent already wrote it itself
	if !tr.takeApproved(file, "new\nkept\n") {
		t.Error("the approved content, already there, is refused")
	}
	tr.grant(acp.ToolCallUpdate{RawInput: map[string]any{"filepath": "../outside.txt", "diff": diff}})
	tr.grant(acp.ToolCallUpdate{RawInput: map[string]any{"command": "ls"}})
	if len(tr.edits.diffs[file]) != 0 || len(tr.edits.diffs) != 1 {
		t.Errorf("grants recorded %v", tr.edits.diffs)
	}
}
