package files

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/tool/workspace"
)

// keeper is a workspace.Checkpointer that keeps the first prior state of
// each file per message, as the store's does, and can refuse.
type keeper struct {
	mu     sync.Mutex
	calls  []workspace.Change
	kept   map[string]workspace.Prior // message + path -> prior
	refuse error
}

func (k *keeper) Before(_ context.Context, c workspace.Change, prior func() (workspace.Prior, error)) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls = append(k.calls, c)
	if k.refuse != nil {
		return k.refuse
	}
	key := c.ToolCallID + "|" + c.Path
	if _, ok := k.kept[key]; ok {
		return nil
	}
	p, err := prior()
	if err != nil {
		return err
	}
	k.kept[key] = p
	return nil
}

// Write and Edit hand the checkpointer each file before they change it:
// its exact bytes and mode, or its absence; a refusal leaves the file as
// it was.
func TestCheckpointerSeesPriorState(t *testing.T) {
	e := newEnv(t)
	k := &keeper{kept: map[string]workspace.Prior{}}
	e.ts.SetCheckpointer(k)
	orig := []byte("one\r\ntwo \xff\n")
	path := filepath.Join(e.root, "f.txt")
	if err := os.WriteFile(path, orig, 0o640); err != nil {
		t.Fatal(err)
	}
	e.ok(e.call(Read, "s1", map[string]any{"file_path": "f.txt"}))
	e.ok(e.call(Edit, "s1", map[string]any{"file_path": "f.txt", "old_string": "one", "new_string": "ONE"}))
	e.ok(e.call(Write, "s1", map[string]any{"file_path": "sub/new.txt", "content": "x"}))
	if len(k.calls) != 2 {
		t.Fatalf("checkpointer called %d times, want 2: %+v", len(k.calls), k.calls)
	}
	c := k.calls[0]
	if c.SessionID != "s1" || c.ToolCallID != "call_1" || c.Root != e.root || c.Path != "f.txt" {
		t.Errorf("change = %+v", c)
	}
	p := k.kept["call_1|f.txt"]
	if !p.Exists || p.Mode != 0o640 || !bytes.Equal(p.Content, orig) {
		t.Errorf("prior of f.txt = %+v (%q), want %q mode 0640", p, p.Content, orig)
	}
	if p := k.kept["call_1|sub/new.txt"]; p.Exists || p.Content != nil {
		t.Errorf("prior of a new file = %+v, want absent", p)
	}

	k.refuse = errors.New("store full")
	before, _ := os.ReadFile(path)
	e.fails(e.call(Write, "s1", map[string]any{"file_path": "f.txt", "content": "lost"}), "Cannot checkpoint", "store full", "not changed")
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Errorf("a refused checkpoint changed the file: %q, was %q", after, before)
	}
}
