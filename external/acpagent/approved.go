package acpagent

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// approvedEdits are the edits a turn's agent was granted through
// session/request_permission and has not written yet: per file (its
// absolute path in the member's directory), the diffs the approval
// showed. opencode asks with rawInput {"filepath", "diff"} and, once
// granted, sends the new content with fs/write_text_file, having read
// the file itself, never through fs/read_text_file.
type approvedEdits struct {
	mu    sync.Mutex
	diffs map[string][]string
}

// permissionEdit is the file and diff of a permission request, when it
// names both (opencode's edit requests).
type permissionEdit struct {
	Filepath string `json:"filepath"`
	Diff     string `json:"diff"`
}

// grant records the edit of a granted permission request, if it is one.
func (t *turn) grant(tc acp.ToolCallUpdate) {
	var e permissionEdit
	if json.Unmarshal(rawJSON(tc.RawInput), &e) != nil || e.Filepath == "" || e.Diff == "" {
		return
	}
	abs, err := t.n.ws.Resolve(e.Filepath)
	if err != nil {
		return // outside the member's directory: the write will be refused anyway
	}
	t.edits.mu.Lock()
	defer t.edits.mu.Unlock()
	if t.edits.diffs == nil {
		t.edits.diffs = map[string][]string{}
	}
	t.edits.diffs[abs] = append(t.edits.diffs[abs], e.Diff)
}

// takeApproved reports whether writing content to abs is an edit the
// agent was granted, judged against the file as it is now: its current
// text with the approved diff applied is content (or it is content
// already: the agent may have written it itself, as opencode does). The
// grant is used up. This is what stands in for the read-before-write
// rule's read: the diff's context and removed lines show that the agent
// saw the file's current text, and the user approved that very change.
func (t *turn) takeApproved(abs, content string) bool {
	t.edits.mu.Lock()
	defer t.edits.mu.Unlock()
	diffs := t.edits.diffs[abs]
	if len(diffs) == 0 {
		return false
	}
	current, err := t.currentText(abs)
	if err != nil {
		return false
	}
	for i, d := range diffs {
		if patched, err := applyPatch(current, d); current == content || (err == nil && patched == content) {
			t.edits.diffs[abs] = append(diffs[:i:i], diffs[i+1:]...)
			return true
		}
	}
	return false
}

// currentText is the text of the file abs in the member's directory, ""
// when it does not exist.
func (t *turn) currentText(abs string) (string, error) {
	root, err := t.n.ws.Open()
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.OpenFile(abs, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil || len(b) > maxReadBytes {
		return "", errors.New("unreadable or too large")
	}
	return string(b), nil
}
