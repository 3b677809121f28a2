package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/shell"
	"github.com/agentpool/agentpool/tool/workspace"
)

// workspace2000 is a workspace of 2,000 files of 2 KiB in 20 directories.
func workspace2000(b *testing.B) string {
	dir := b.TempDir()
	content := make([]byte, 2048)
	for d := range 20 {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", f)), content, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir
}

// BenchmarkBashCall is a Bash call (`true`) on its own: the cost the
// watch adds to is this.
func BenchmarkBashCall(b *testing.B) {
	ws, err := workspace.New(workspace2000(b))
	if err != nil {
		b.Fatal(err)
	}
	ts := shell.New(ws)
	defer ts.Close()
	var bash tool.Tool
	for _, t := range ts.Tools() {
		if t.Info().Name == shell.Bash {
			bash = t
		}
	}
	call := tool.Call{ID: "c", Name: shell.Bash, Args: []byte(`{"command":"true"}`), SessionID: "s"}
	for b.Loop() {
		if res := tool.Run(context.Background(), bash, call); res.IsError {
			b.Fatal(res.Content)
		}
	}
}

// BenchmarkScan2000 is what a watched call adds: two scans of the
// workspace (before and after) once the first has read the files, and
// the diff.
func BenchmarkScan2000(b *testing.B) {
	root := workspace2000(b)
	var sc scanner
	sc.scan(root)
	for b.Loop() {
		before := sc.scan(root)
		after := sc.scan(root)
		if len(before.files) != 2000 || before.short != "" || len(changed(before, after)) != 0 {
			b.Fatalf("scan: %d files, short %q", len(before.files), before.short)
		}
	}
}

// BenchmarkScan2000Cold is the first scan of a workspace: every file read.
func BenchmarkScan2000Cold(b *testing.B) {
	root := workspace2000(b)
	for b.Loop() {
		var sc scanner
		if s := sc.scan(root); len(s.files) != 2000 {
			b.Fatal(len(s.files))
		}
	}
}

// BenchmarkScanIgnoredDir is BenchmarkScan2000's two scans in a workspace
// that also holds a node_modules of 10,000 small files in 100
// directories: with the .gitignore that names it (skipped whole), and
// without it (scanned, 12,000 files).
func BenchmarkScanIgnoredDir(b *testing.B) {
	root := workspace2000(b)
	content := []byte("module.exports = 1;\n")
	for d := range 100 {
		sub := filepath.Join(root, "node_modules", fmt.Sprintf("p%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.js", f)), content, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name   string
		ignore bool
		files  int
	}{{"gitignore", true, 2001}, {"no-gitignore", false, 12_000}} {
		b.Run(c.name, func(b *testing.B) {
			gi := filepath.Join(root, ".gitignore")
			if c.ignore {
				if err := os.WriteFile(gi, []byte("node_modules/\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			} else if err := os.Remove(gi); err != nil && !os.IsNotExist(err) {
				b.Fatal(err)
			}
			var sc scanner
			sc.scan(root)
			for b.Loop() {
				before := sc.scan(root)
				after := sc.scan(root)
				if len(before.files) != c.files || before.short != "" || len(changed(before, after)) != 0 {
					b.Fatalf("scan: %d files, short %q", len(before.files), before.short)
				}
			}
		})
	}
}
