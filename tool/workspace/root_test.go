package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootStaysInside: a Root follows links that stay inside, and fails,
// naming the absolute path, for those that lead out or are absolute,
// where Resolve would have judged the path before it was swapped.
func TestRootStaysInside(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, out := filepath.Join(base, "ws"), filepath.Join(base, "out")
	for _, d := range []string{dir, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(in("in.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "secret"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"rel": "in.txt", "abs": in("in.txt"), "outdir": out, "outfile": filepath.Join(out, "secret")} {
		if err := os.Symlink(target, in(link)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := w.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	if info, err := root.Stat(in("rel")); err != nil || info.Size() != int64(len("inside")) {
		t.Fatalf("a relative link inside: %v %v", info, err)
	}
	for _, name := range []string{"abs", "outfile", "outdir/secret"} {
		if _, err := root.Stat(in(name)); err == nil || !strings.Contains(err.Error(), in(name)) {
			t.Errorf("%s: want an error naming %s, got %v", name, in(name), err)
		}
	}
	if _, err := root.ReadDir(in("outdir")); err == nil {
		t.Error("listed a directory outside through a link")
	}
	if f, err := root.OpenFile(in("outdir/new"), os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
		f.Close()
		t.Error("created a file through a link out")
	}
	if err := root.MkdirAll(in("outdir/sub"), 0o755); err == nil {
		t.Error("made a directory through a link out")
	}
	if err := root.Rename(in("in.txt"), in("outdir/moved")); err == nil {
		t.Error("renamed a file through a link out")
	}
	if names, _ := os.ReadDir(out); len(names) != 1 {
		t.Errorf("the outside directory changed: %v", names)
	}
	if _, err := root.Stat("/etc/passwd"); !errors.Is(err, ErrOutside) {
		t.Errorf("a path outside: %v", err)
	}
}
