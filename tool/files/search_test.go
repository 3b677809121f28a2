package files

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGlob(t *testing.T) {
	e := newEnv(t)
	files := []string{"main.go", "cmd/app/main.go", "cmd/app/util.go", "pkg/lib.go", "pkg/lib_test.go", "README.md", "web/x.ts", "web/y.tsx", ".git/config.go", "sub/.git/hooks/x.go", ".hidden/h.go"}
	for i, f := range files {
		e.file(f, "x")
		e.touch(f, time.Duration(i)*time.Minute) // later in the list: newer
	}
	abs := func(names ...string) string {
		var sb strings.Builder
		for _, n := range names {
			sb.WriteString(filepath.Join(e.root, n) + "\n")
		}
		return sb.String()
	}
	cases := []struct {
		name string
		args m
		want string
	}{
		{"recursive, newest first", m{"pattern": "**/*.go"}, abs(".hidden/h.go", "pkg/lib_test.go", "pkg/lib.go", "cmd/app/util.go", "cmd/app/main.go", "main.go")},
		{"top level only", m{"pattern": "*.go"}, abs("main.go")},
		{"static prefix", m{"pattern": "cmd/**/*.go"}, abs("cmd/app/util.go", "cmd/app/main.go")},
		{"segments", m{"pattern": "cmd/*/main.go"}, abs("cmd/app/main.go")},
		{"braces", m{"pattern": "web/*.{ts,tsx}"}, abs("web/y.tsx", "web/x.ts")},
		{"under path", m{"pattern": "*.go", "path": "pkg"}, abs("pkg/lib_test.go", "pkg/lib.go")},
		{"absolute pattern", m{"pattern": filepath.Join(e.root, "pkg") + "/*_test.go"}, abs("pkg/lib_test.go")},
		{"literal name", m{"pattern": "README.md"}, abs("README.md")},
		{"no match", m{"pattern": "**/*.rs"}, `No files found matching "**/*.rs" in ` + e.root + "."},
		{"missing base", m{"pattern": "nope/**/*.go"}, `No files found matching "nope/**/*.go" in ` + e.root + "."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.ok(e.call(Glob, "s1", c.args))
			if res.Content != c.want {
				t.Fatalf("got\n%s\nwant\n%s", res.Content, c.want)
			}
		})
	}
	e.fails(e.call(Glob, "s1", m{"pattern": "[abc"}), `Invalid glob pattern "[abc"`)
	e.fails(e.call(Glob, "s1", m{"pattern": "*", "path": "main.go"}), "is a file, not a directory")
	e.fails(e.call(Glob, "s1", m{"pattern": ""}), "pattern is required")
}

func TestGlobCap(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 150; i++ {
		f := fmt.Sprintf("d/f%03d.txt", i)
		e.file(f, "")
		e.touch(f, time.Duration(i)*time.Second)
	}
	res := e.ok(e.call(Glob, "s1", m{"pattern": "**/*.txt"}))
	lines := strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
	if len(lines) != 101 || lines[0] != filepath.Join(e.root, "d/f149.txt") || lines[99] != filepath.Join(e.root, "d/f050.txt") ||
		lines[100] != "... 50 more files not shown (150 matched in all); use a narrower pattern or path." {
		t.Fatalf("%d lines: %q ... %q", len(lines), lines[0], lines[len(lines)-2:])
	}
	if res.Metadata["matches"] != 150 || res.Metadata["truncated"] != true {
		t.Fatalf("metadata %+v", res.Metadata)
	}
}

func TestGrep(t *testing.T) {
	e := newEnv(t)
	a := e.file("a.go", "package a\n\nfunc Hello() {}\n// hello again\n")
	b := e.file("sub/b.go", "package b\nvar x = \"HELLO\"\n")
	c := e.file("sub/c.txt", "one\ntwo\nhello three\nfour\nfive\nsix\nseven\nhello eight\nnine\n")
	e.file("bin.dat", "hello\x00binary")
	e.file(".git/HEAD", "hello from git")
	e.touch(a, 3*time.Minute)
	e.touch(b, 2*time.Minute)
	e.touch(c, 1*time.Minute)
	cases := []struct {
		name string
		args m
		want string
	}{
		{"files, newest first", m{"pattern": "hello"}, "Found 2 files\n" + a + "\n" + c + "\n"},
		{"ignore case", m{"pattern": "hello", "-i": true}, "Found 3 files\n" + a + "\n" + b + "\n" + c + "\n"},
		{"content", m{"pattern": "hello", "output_mode": "content"}, a + ":4:// hello again\n" + c + ":3:hello three\n" + c + ":8:hello eight\n"},
		{"content without numbers", m{"pattern": "Hello", "output_mode": "content", "-n": false}, a + ":func Hello() {}\n"},
		{"count", m{"pattern": "hello", "output_mode": "count", "-i": true},
			a + ":2\n" + b + ":1\n" + c + ":2\n\nFound 5 matching lines in 3 files.\n"},
		{"context", m{"pattern": "hello", "output_mode": "content", "path": "sub/c.txt", "-C": 1},
			"2-two\n3:hello three\n4-four\n--\n7-seven\n8:hello eight\n9-nine\n"},
		{"after and before", m{"pattern": "three|six", "output_mode": "content", "path": "sub", "-A": 1, "-B": 2},
			c + "-1-one\n" + c + "-2-two\n" + c + ":3:hello three\n" + c + "-4-four\n" + c + "-5-five\n" + c + ":6:six\n" + c + "-7-seven\n"},
		{"context across files", m{"pattern": "^package", "output_mode": "content", "-A": 1},
			a + ":1:package a\n" + a + "-2-\n--\n" + b + ":1:package b\n" + b + "-2-var x = \"HELLO\"\n"},
		{"glob", m{"pattern": "hello", "-i": true, "glob": "*.go"}, "Found 2 files\n" + a + "\n" + b + "\n"},
		{"glob with a path", m{"pattern": "hello", "-i": true, "glob": "sub/*.go"}, "Found 1 file\n" + b + "\n"},
		{"negated glob", m{"pattern": "hello", "-i": true, "glob": "!*.go"}, "Found 1 file\n" + c + "\n"},
		{"type", m{"pattern": "hello", "-i": true, "type": "go", "path": "sub"}, "Found 1 file\n" + b + "\n"},
		{"head_limit on content", m{"pattern": "hello", "output_mode": "content", "head_limit": 2},
			a + ":4:// hello again\n" + c + ":3:hello three\n... [more results not shown: head_limit is 2]\n"},
		{"head_limit on files", m{"pattern": "hello", "-i": true, "head_limit": 1},
			"Found 3 files\n" + a + "\n... [more results not shown: head_limit is 1]\n"},
		{"head_limit not reached", m{"pattern": "Hello", "head_limit": 1}, "Found 1 file\n" + a + "\n"},
		{"regexp", m{"pattern": `func \w+\(\)`, "output_mode": "content"}, a + ":3:func Hello() {}\n"},
		{"no match", m{"pattern": "absent"}, `No matches found for "absent" in ` + e.root + "."},
		{"binary and .git skipped", m{"pattern": "binary|git"}, `No matches found for "binary|git" in ` + e.root + "."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.ok(e.call(Grep, "s1", c.args))
			if res.Content != c.want {
				t.Fatalf("got\n%s\nwant\n%s", res.Content, c.want)
			}
		})
	}
	e.fails(e.call(Grep, "s1", m{"pattern": "a(b"}), "Invalid regular expression")
	e.fails(e.call(Grep, "s1", m{"pattern": "x", "output_mode": "lines"}), `Unknown output_mode "lines"`)
	e.fails(e.call(Grep, "s1", m{"pattern": "x", "type": "cobol"}), `Unknown file type "cobol"`)
	e.fails(e.call(Grep, "s1", m{"pattern": "x", "path": "missing"}), "Path does not exist")
}

func TestGrepOutputCap(t *testing.T) {
	e := newEnv(t)
	var sb strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&sb, "match %d %s\n", i, strings.Repeat("x", 40))
	}
	e.file("many.txt", sb.String())
	e.file("long.txt", "match "+strings.Repeat("y", 1000)+"\n")
	res := e.ok(e.call(Grep, "s1", m{"pattern": "match", "output_mode": "content", "path": "long.txt"}))
	if res.Content != "1:match "+strings.Repeat("y", 494)+" [... line truncated]\n" {
		t.Fatalf("got %q", res.Content)
	}
	res = e.ok(e.call(Grep, "s1", m{"pattern": "match", "output_mode": "content", "path": "many.txt"}))
	if len(res.Content) > maxGrepOutput+200 || !strings.HasSuffix(res.Content,
		"... [output cut at 30000 characters; narrow the search with path, glob or type, or use head_limit]\n") ||
		res.Metadata["truncated"] != true {
		t.Fatalf("%d chars, tail %q", len(res.Content), res.Content[len(res.Content)-150:])
	}
	if !strings.HasPrefix(res.Content, "1:match 0 ") {
		t.Fatalf("head %q", res.Content[:40])
	}
}

func TestLS(t *testing.T) {
	e := newEnv(t)
	for _, f := range []string{"b.txt", "a/x.go", "a/y.log", "a/deep/z.go", "node_modules/m/index.js", ".git/HEAD", "empty/.keep"} {
		e.file(f, "")
	}
	cases := []struct {
		name string
		args m
		want string
	}{
		{"root", m{}, "- " + e.root + "/\n  - .git/\n  - a/\n    - deep/\n      - z.go\n    - x.go\n    - y.log\n  - b.txt\n  - empty/\n    - .keep\n" +
			"  - node_modules/\n    - m/\n      - index.js\n"},
		{"ignore", m{"path": ".", "ignore": []string{"node_modules", "*.log", "a/deep", ".*"}},
			"- " + e.root + "/\n  - a/\n    - x.go\n  - b.txt\n  - empty/\n"},
		{"subdirectory", m{"path": "a/deep"}, "- " + filepath.Join(e.root, "a/deep") + "/\n  - z.go\n"},
		{"absolute", m{"path": filepath.Join(e.root, "a")}, "- " + filepath.Join(e.root, "a") + "/\n  - deep/\n    - z.go\n  - x.go\n  - y.log\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.ok(e.call(LS, "s1", c.args))
			if res.Content != c.want {
				t.Fatalf("got\n%s\nwant\n%s", res.Content, c.want)
			}
		})
	}
	e.fails(e.call(LS, "s1", m{"path": "b.txt"}), "is a file, not a directory. Use Read")
	e.fails(e.call(LS, "s1", m{"path": "nope"}), "Directory does not exist: "+filepath.Join(e.root, "nope"))
	e.fails(e.call(LS, "s1", m{"ignore": []string{"[x"}}), "Invalid ignore pattern")
}

func TestLSCap(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 30; i++ {
		for j := 0; j < 40; j++ {
			e.file(fmt.Sprintf("d%02d/f%02d", i, j), "")
		}
	}
	res := e.ok(e.call(LS, "s1", m{}))
	lines := strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
	// The note, the root, then 1000 entries: the 30 directories first.
	if len(lines) != 1002 || lines[0] != "Listing cut at 1000 entries: some entries are not shown. List a subdirectory, or use Glob to find specific files." {
		t.Fatalf("%d lines, first %q", len(lines), lines[0])
	}
	if strings.Count(res.Content, "\n  - d") != 30 || res.Metadata["entries"] != 1000 || res.Metadata["truncated"] != true {
		t.Fatalf("dirs %d, metadata %+v", strings.Count(res.Content, "\n  - d"), res.Metadata)
	}
}
