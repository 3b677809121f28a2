//go:build linux

package files

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSymlinkSwapRace is the finding of issue 31, item 6: a path of the
// workspace swapped between a regular file (or directory) and a symbolic
// link to the outside while the tools run let Read, Write, Grep and Glob
// escape the workspace, because the path was checked first and opened
// afterwards. The swap is atomic (renameat2 RENAME_EXCHANGE, Linux), so
// the path always exists and only its kind changes under the tools.
func TestSymlinkSwapRace(t *testing.T) {
	e := newEnv(t)
	const secret = "TOP SECRET outside\n"
	secretFile := e.file(filepath.Join(e.out, "secret.txt"), secret)
	e.file(filepath.Join(e.out, "only-outside.txt"), secret)
	outsideBefore := listDir(t, e.out)

	// swap.txt and dir are real; .swap and .dir link out. The swapper
	// exchanges each pair of names as fast as it can.
	e.file("swap.txt", "harmless inside\n")
	e.symlink(secretFile, ".swap")
	e.file("dir/secret.txt", "harmless inside\n")
	e.symlink(e.out, ".dir")
	pairs := [][2]string{
		{filepath.Join(e.root, "swap.txt"), filepath.Join(e.root, ".swap")},
		{filepath.Join(e.root, "dir"), filepath.Join(e.root, ".dir")},
	}
	if err := exchange(pairs[0][0], pairs[0][1]); err != nil {
		t.Skip("no RENAME_EXCHANGE here:", err)
	}
	stop := make(chan struct{})
	swaps := 0
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, p := range pairs {
				if err := exchange(p[0], p[1]); err != nil {
					t.Errorf("swap: %v", err)
					return
				}
			}
			swaps++
		}
	})

	leaks := map[string]int{}
	check := func(tool, content string) {
		if strings.Contains(content, "TOP SECRET") || strings.Contains(content, "only-outside") {
			leaks[tool]++
		}
	}
	const rounds = 100
	for i := range rounds {
		check(Read, e.call(Read, "s1", m{"file_path": "swap.txt"}).Content)
		check(Read, e.call(Read, "s1", m{"file_path": "dir/secret.txt"}).Content)
		e.call(Write, "s1", m{"file_path": fmt.Sprintf("dir/new-%d.txt", i), "content": "written inside\n"})
		check(Grep, e.call(Grep, "s1", m{"pattern": "TOP SECRE[T]", "output_mode": "content"}).Content)
		check(Glob, e.call(Glob, "s1", m{"pattern": "**/*.txt"}).Content)
		check(LS, e.call(LS, "s1", m{}).Content)
	}
	close(stop)
	wg.Wait()

	if after := listDir(t, e.out); !slices.Equal(after, outsideBefore) {
		leaks[Write] = len(after) - len(outsideBefore)
		t.Errorf("files appeared outside the workspace: %v", after)
	}
	if got := e.content(secretFile); got != secret {
		t.Errorf("the outside file was changed: %q", got)
	}
	if len(leaks) > 0 {
		t.Errorf("escapes from the workspace in %d rounds (%d swaps): %v", rounds, swaps, leaks)
	}
}

// exchange swaps the names a and b atomically.
func exchange(a, b string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
		return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
	}
	return nil
}

// listDir returns the names below dir, recursively.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
