package bounded_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/internal/bounded"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// small are bounds small enough to pass in a test.
var small = bounded.Limits{FileBytes: 100, TotalBytes: 250, Files: 3, Depth: 5, Nodes: 50, AliasNodes: 20}

// wantBound checks that err is an *Error for bound b at line (0: the whole
// file) whose message holds want.
func wantBound(t *testing.T, err error, b bounded.Bound, line int, want string) {
	t.Helper()
	var be *bounded.Error
	if !errors.As(err, &be) {
		t.Fatalf("error %v, want the %s bound", err, b)
	}
	if be.Bound != b || be.Line != line || !strings.Contains(be.Error(), want) {
		t.Fatalf("error %q (bound %s, line %d), want bound %s at line %d saying %q", be, be.Bound, be.Line, b, line, want)
	}
}

func write(t *testing.T, dir, name string, size int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(strings.Repeat("x", size)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadFileBounds(t *testing.T) {
	dir := t.TempDir()
	b := bounded.New(small)
	if data, err := b.ReadFile(write(t, dir, "full", 100)); err != nil || len(data) != 100 {
		t.Fatalf("a file at the bound: %d bytes, %v", len(data), err)
	}
	_, err := b.ReadFile(write(t, dir, "big", 101))
	wantBound(t, err, bounded.FileBytes, 0, "file is 101 bytes, more than the limit of 100 bytes per file")
	if _, err := b.ReadFile(write(t, dir, "more", 100)); err != nil {
		t.Fatal(err)
	}
	// 200 of 250 bytes spent: 51 more pass the total.
	_, err = b.ReadFile(write(t, dir, "over", 51))
	wantBound(t, err, bounded.TotalBytes, 0, "more than the 50 bytes left of the limit of 250 bytes")
	if err := b.Take(50); err != nil {
		t.Fatal(err)
	}
	_, err = b.ReadFile(write(t, dir, "empty", 0))
	wantBound(t, err, bounded.Files, 0, "too many files for one load (more than 3)")
}

func TestReadFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes:", err)
	}
	// No writer ever opens the pipe: a blocking open would wait forever.
	_, err := bounded.New(small).ReadFile(fifo)
	if !errors.Is(err, bounded.ErrNotRegular) || !strings.Contains(err.Error(), "a named pipe") {
		t.Errorf("named pipe: %v", err)
	}
	_, err = bounded.New(small).ReadFile("/dev/zero")
	if !errors.Is(err, bounded.ErrNotRegular) || !strings.Contains(err.Error(), "a device") {
		t.Errorf("/dev/zero: %v", err)
	}
	var pe *fs.PathError
	if _, err = bounded.New(small).ReadFile(dir); !errors.As(err, &pe) || !errors.Is(err, syscall.EISDIR) {
		t.Errorf("directory: %v", err)
	}
	if _, err = bounded.New(small).ReadFile(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func parseYAML(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}

// bomb is the billion laughs shape: levels lines, each a list of width
// aliases to the line before.
func bomb(levels, width int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [" + strings.TrimSuffix(strings.Repeat("lol, ", width), ", ") + "]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), width), ", "))
	}
	return b.String()
}

func TestCheckYAML(t *testing.T) {
	for _, c := range []struct {
		name, src string
		bound     bounded.Bound // "" when the document fits
		line      int
		msg       string
	}{
		{"fits", "a: &a [1, 2]\nb: [*a, *a]\n", "", 0, ""},
		// 4 nodes per *l0, 3 aliases per line: line 2 adds 12, line 3
		// 3*(1+12) more.
		{"bomb", bomb(4, 3), bounded.AliasNodes, 3, "too many YAML alias expansions (more than 20 nodes reached through aliases)"},
		{"cycle", "a: &a {k: [*a]}\n", bounded.AliasCycle, 1, "YAML alias *a refers to a node that contains it"},
		{"deep", "a: [[[[[x]]]]]\n", bounded.Depth, 1, "YAML nested too deeply (more than 5 levels, aliases followed)"},
		{"deep through an alias", "a: &a [[[x]]]\nb: [*a]\n", bounded.Depth, 2, "more than 5 levels"},
		{"nodes", "a: [" + strings.Repeat("x, ", 60) + "x]\n", bounded.Nodes, 1, "too many YAML nodes (more than 50, aliases expanded)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := bounded.New(small).CheckYAML(parseYAML(t, c.src))
			if c.bound == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantBound(t, err, c.bound, c.line, c.msg)
		})
	}
}

// The node bound is the budget's: documents checked one after the other
// add up.
func TestCheckYAMLBudgetAddsUp(t *testing.T) {
	b := bounded.New(small)
	doc := "a: [" + strings.Repeat("x, ", 22) + "x]\n" // 26 nodes
	if err := b.CheckYAML(parseYAML(t, doc)); err != nil {
		t.Fatal(err)
	}
	if err := b.CheckYAML(parseYAML(t, doc)); err == nil {
		t.Fatal("a second document past the node bound passed")
	}
}

// The real bounds refuse a billion laughs of nine levels at once, having
// read it only as written.
func TestCheckYAMLBillionLaughs(t *testing.T) {
	err := bounded.New(bounded.Config).CheckYAML(parseYAML(t, bomb(9, 9)))
	wantBound(t, err, bounded.AliasNodes, 6, "more than 100000 nodes reached through aliases")
}

func TestCheckJSON(t *testing.T) {
	for _, c := range []struct {
		name, src string
		bound     bounded.Bound
		line      int
		msg       string
	}{
		{"fits", `{"a": [1, 2, {"b": null}]}`, "", 0, ""},
		{"malformed is the decoder's", `{"a": [1,`, "", 0, ""},
		{"deep", "{\"a\":\n[[[[[1]]]]]}", bounded.Depth, 2, "JSON nested too deeply (more than 5 levels)"},
		{"nodes", "[\n" + strings.Repeat("1,\n", 60) + "1]", bounded.Nodes, 51, "too many JSON values (more than 50, keys included)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := bounded.New(small).CheckJSON([]byte(c.src))
			if c.bound == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantBound(t, err, c.bound, c.line, c.msg)
		})
	}
}
