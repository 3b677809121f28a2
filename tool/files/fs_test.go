package files

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/tool/workspace"
)

// fakeFS is an editor's file system: its buffers, and the calls it got.
type fakeFS struct {
	mu    sync.Mutex
	files map[string]string
	calls []string
}

func (f *fakeFS) ReadTextFile(_ context.Context, path string, line, limit int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("read %s %d %d", path, line, limit))
	s, ok := f.files[path]
	if !ok {
		return "", fs.ErrNotExist
	}
	return s, nil
}

func (f *fakeFS) WriteTextFile(_ context.Context, path, content string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "write "+path)
	f.files[path] = content
	return nil
}

func (f *fakeFS) log() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := strings.Join(f.calls, "\n")
	f.calls = nil
	return s
}

func TestFrontEndFS(t *testing.T) {
	e := newEnv(t)
	p := e.file("f.go", "on disk\n")
	editor := &fakeFS{files: map[string]string{p: "unsaved\nbuffer\n", filepath.Join(e.root, "only-in-editor.txt"): "new\n",
		filepath.Join(e.root, "unread.txt"): "u\n"}}
	ctx := workspace.WithFS(context.Background(), editor)
	call := func(name, args string) string {
		t.Helper()
		res := e.callRaw(ctx, name, "s1", []byte(args))
		if res.IsError {
			return "error: " + res.Content
		}
		return res.Content
	}

	// Read sees the buffer, not the disk.
	if got := call(Read, `{"file_path":"f.go"}`); got != "     1\tunsaved\n     2\tbuffer\n" {
		t.Fatalf("read %q", got)
	}
	if got := editor.log(); got != "read "+p+" 0 0" {
		t.Fatalf("calls %q", got)
	}
	if got := call(Read, `{"file_path":"only-in-editor.txt"}`); got != "     1\tnew\n" {
		t.Fatalf("read %q", got)
	}
	editor.log()

	// Edit reads and writes the buffer; the disk stays as it was.
	if got := call(Edit, `{"file_path":"f.go","old_string":"buffer","new_string":"text"}`); !strings.HasPrefix(got, "Edited "+p+": 1 replacement") {
		t.Fatalf("edit %q", got)
	}
	if got := editor.log(); got != "read "+p+" 0 0\nwrite "+p {
		t.Fatalf("calls %q", got)
	}
	if editor.files[p] != "unsaved\ntext\n" || e.content(p) != "on disk\n" {
		t.Fatalf("buffer %q disk %q", editor.files[p], e.content(p))
	}

	// The buffer changes under the agent (the user types): refused, though
	// the disk did not change.
	editor.mu.Lock()
	editor.files[p] = "the user typed\n"
	editor.mu.Unlock()
	if got := call(Edit, `{"file_path":"f.go","old_string":"text","new_string":"more"}`); got != "error: "+errModified {
		t.Fatalf("edit %q", got)
	}
	if got := call(Write, `{"file_path":"f.go","content":"x"}`); got != "error: "+errModified {
		t.Fatalf("write %q", got)
	}

	// A new file goes to the editor too, with a diff from nothing.
	res := e.callRaw(ctx, Write, "s1", []byte(`{"file_path":"dir/n.txt","content":"hi\n"}`))
	np := filepath.Join(e.root, "dir/n.txt")
	if res.IsError || editor.files[np] != "hi\n" || len(res.Diffs) != 1 || res.Diffs[0].OldText != nil {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(np); !os.IsNotExist(err) {
		t.Fatal("the new file was written to disk, not to the editor")
	}
	// An existing buffer that was not read is refused.
	if got := call(Write, `{"file_path":"unread.txt","content":"x"}`); got != "error: "+errNotRead {
		t.Fatalf("write %q", got)
	}
	editor.log()

	// Confinement comes first: the editor is never asked.
	if got := call(Read, `{"file_path":"../outside/x"}`); !strings.Contains(got, "outside the workspace") {
		t.Fatalf("read %q", got)
	}
	if got := call(Write, `{"file_path":"/etc/x","content":"x"}`); !strings.Contains(got, "outside the workspace") {
		t.Fatalf("write %q", got)
	}
	if got := editor.log(); got != "" {
		t.Fatalf("the editor was asked: %q", got)
	}
	// Searches read the disk.
	if got := call(Grep, `{"pattern":"disk","output_mode":"content"}`); got != p+":1:on disk\n" {
		t.Fatalf("grep %q", got)
	}
	if got := editor.log(); got != "" {
		t.Fatalf("the editor was asked: %q", got)
	}
}
