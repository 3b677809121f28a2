package files

import (
	"fmt"
	"testing"
)

// BenchmarkFileTools measures a Read of a small file, and a Grep and a
// Glob over a tree of 200 files in 20 directories: what reaching files
// through the workspace's os.Root costs shows here.
func BenchmarkFileTools(b *testing.B) {
	e := newEnv(b)
	for d := range 20 {
		for f := range 10 {
			e.file(fmt.Sprintf("d%02d/sub/f%02d.go", d, f), "package x\n\nfunc F() {}\n// needle\n")
		}
	}
	for _, c := range []struct {
		tool string
		args m
	}{
		{Read, m{"file_path": "d07/sub/f03.go"}},
		{Grep, m{"pattern": "needle", "output_mode": "count"}},
		{Glob, m{"pattern": "**/f0[0-4].go"}},
	} {
		b.Run(c.tool, func(b *testing.B) {
			for b.Loop() {
				if res := e.call(c.tool, "s1", c.args); res.IsError {
					b.Fatal(res.Content)
				}
			}
		})
	}
}
