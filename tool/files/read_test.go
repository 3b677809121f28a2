package files

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	e := newEnv(t)
	abs := e.file("src/main.go", "package main\n\nfunc main() {}\n")
	e.file("crlf.txt", "one\r\ntwo\r\n")
	e.file("noeol.txt", "a\nb")
	e.file("empty.txt", "")
	e.file("ten.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")
	cases := []struct {
		name string
		args m
		want string
	}{
		{"whole file", m{"file_path": "src/main.go"}, "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n"},
		{"absolute path", m{"file_path": abs}, "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n"},
		{"crlf shown without carriage returns", m{"file_path": "crlf.txt"}, "     1\tone\n     2\ttwo\n"},
		{"no final newline", m{"file_path": "noeol.txt"}, "     1\ta\n     2\tb\n"},
		{"empty", m{"file_path": "empty.txt"}, "The file " + filepath.Join(e.root, "empty.txt") + " exists but is empty."},
		{"offset and limit", m{"file_path": "ten.txt", "offset": 4, "limit": 3},
			"     4\t4\n     5\t5\n     6\t6\n... 4 more lines; use offset/limit to read them (next offset: 7)\n"},
		{"limit only", m{"file_path": "ten.txt", "limit": 9},
			"     1\t1\n     2\t2\n     3\t3\n     4\t4\n     5\t5\n     6\t6\n     7\t7\n     8\t8\n     9\t9\n... 1 more line; use offset/limit to read them (next offset: 10)\n"},
		{"offset to the end", m{"file_path": "ten.txt", "offset": 9}, "     9\t9\n    10\t10\n"},
		{"offset past the end", m{"file_path": "ten.txt", "offset": 11},
			"The file " + filepath.Join(e.root, "ten.txt") + " has 10 lines; offset 11 is past its end."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := e.ok(e.call(Read, "s1", c.args))
			if res.Content != c.want {
				t.Fatalf("got\n%q\nwant\n%q", res.Content, c.want)
			}
		})
	}
	res := e.call(Read, "s1", m{"file_path": "ten.txt", "offset": 4, "limit": 3})
	if len(res.Locations) != 1 || res.Locations[0].Path != filepath.Join(e.root, "ten.txt") || res.Locations[0].Line != 4 {
		t.Fatalf("locations %+v", res.Locations)
	}
	if res.Metadata["lines"] != 3 || res.Metadata["total_lines"] != 10 || res.Metadata["truncated"] != true {
		t.Fatalf("metadata %+v", res.Metadata)
	}
}

func TestReadErrors(t *testing.T) {
	e := newEnv(t)
	e.file("dir/f.txt", "x")
	cases := []struct {
		name string
		args m
		want []string
	}{
		{"directory", m{"file_path": "dir"}, []string{filepath.Join(e.root, "dir") + " is a directory", "Use LS"}},
		{"missing", m{"file_path": "nope.txt"}, []string{"File does not exist: " + filepath.Join(e.root, "nope.txt"), "relative paths are taken from the workspace root " + e.root}},
		{"missing absolute", m{"file_path": filepath.Join(e.root, "nope.txt")}, []string{"File does not exist: " + filepath.Join(e.root, "nope.txt")}},
		{"no path", m{}, []string{"file_path is required"}},
		{"negative offset", m{"file_path": "dir/f.txt", "offset": -1}, []string{"must not be negative"}},
		{"bad arguments", m{"file_path": 3}, []string{"invalid arguments"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { e.fails(e.call(Read, "s1", c.args), c.want...) })
	}
}

func TestReadLargeFile(t *testing.T) {
	e := newEnv(t)
	var sb strings.Builder
	for i := 1; i <= 200_000; i++ {
		fmt.Fprintf(&sb, "line %d\n", i)
	}
	e.file("big.txt", sb.String())

	res := e.ok(e.call(Read, "s1", m{"file_path": "big.txt", "offset": 150_000, "limit": 3}))
	want := "150000\tline 150000\n150001\tline 150001\n150002\tline 150002\n" +
		"... 49998 more lines; use offset/limit to read them (next offset: 150003)\n"
	if res.Content != want {
		t.Fatalf("got %q", res.Content)
	}
	if res.Metadata["total_lines"] != 200_000 {
		t.Fatalf("metadata %+v", res.Metadata)
	}

	res = e.ok(e.call(Read, "s1", m{"file_path": "big.txt"}))
	lines := strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
	if len(lines) != 2001 || lines[0] != "     1\tline 1" || lines[1999] != "  2000\tline 2000" ||
		lines[2000] != "... 198000 more lines; use offset/limit to read them (next offset: 2001)" {
		t.Fatalf("%d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	res = e.ok(e.call(Read, "s1", m{"file_path": "big.txt", "offset": 199_999}))
	if res.Content != "199999\tline 199999\n200000\tline 200000\n" {
		t.Fatalf("got %q", res.Content)
	}
	res = e.ok(e.call(Read, "s1", m{"file_path": "big.txt", "offset": 1_000_000}))
	if !strings.Contains(res.Content, "has 200000 lines; offset 1000000 is past its end") {
		t.Fatalf("got %q", res.Content)
	}
}

func TestReadLongLines(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("é", 5000) // 10000 bytes
	e.file("long.txt", "short\n"+long+"\nend\n")
	res := e.ok(e.call(Read, "s1", m{"file_path": "long.txt"}))
	want := "     1\tshort\n     2\t" + strings.Repeat("é", 2000) +
		"... [line truncated to 2000 characters; the full line is 10000 bytes]\n     3\tend\n"
	if res.Content != want {
		t.Fatalf("got %q", res.Content)
	}
	if res.Metadata["truncated"] != true {
		t.Fatalf("metadata %+v", res.Metadata)
	}
	// A line that just fits is not cut.
	e.file("fit.txt", strings.Repeat("x", 2000))
	res = e.ok(e.call(Read, "s1", m{"file_path": "fit.txt"}))
	if res.Content != "     1\t"+strings.Repeat("x", 2000)+"\n" {
		t.Fatalf("got %q", res.Content[len(res.Content)-40:])
	}
	// A single enormous line is streamed, not loaded.
	e.file("huge.txt", strings.Repeat("y", 3<<20)+"\nafter\n")
	res = e.ok(e.call(Read, "s1", m{"file_path": "huge.txt"}))
	if !strings.HasSuffix(res.Content, "... [line truncated to 2000 characters; the full line is 3145728 bytes]\n     2\tafter\n") {
		t.Fatalf("got %q", res.Content[len(res.Content)-200:])
	}
}

func TestReadOutputCap(t *testing.T) {
	e := newEnv(t)
	var sb strings.Builder
	for i := 0; i < 300; i++ {
		sb.WriteString(strings.Repeat("z", 1000) + "\n")
	}
	e.file("wide.txt", sb.String())
	res := e.ok(e.call(Read, "s1", m{"file_path": "wide.txt"}))
	// Each line takes 1008 bytes: 198 fit in 200,000.
	if !strings.HasSuffix(res.Content, "\n   198\t"+strings.Repeat("z", 1000)+"\n"+
		"... [output cut at 200000 characters]\n... 102 more lines; use offset/limit to read them (next offset: 199)\n") {
		t.Fatalf("got tail %q", res.Content[len(res.Content)-200:])
	}
	if res.Metadata["lines"] != 198 || res.Metadata["total_lines"] != 300 {
		t.Fatalf("metadata %+v", res.Metadata)
	}
}

func TestReadBinary(t *testing.T) {
	e := newEnv(t)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + strings.Repeat("\x00", 100)
	latin1 := "caf\xe9 cr\xe8me br\xfbl\xe9e and a long enough line of ordinary ASCII text\n"
	cases := []struct {
		name, content string
		binary        bool
		want          string
	}{
		{"png", png, true, filepath.Join(e.root, "png") + " is a binary file (PNG image, 116 bytes); its content is not shown."},
		{"nul", "text\x00more", true, filepath.Join(e.root, "nul") + " is a binary file (9 bytes); its content is not shown."},
		{"garbage", strings.Repeat("\xff\xfe\x80\x81", 100), true, filepath.Join(e.root, "garbage") + " is a binary file (400 bytes); its content is not shown."},
		{"nul after 8 KiB is text", strings.Repeat("a", 9000) + "\x00", false, ""},
		{"latin-1 text is shown", latin1, false, "     1\tcaf\uFFFD cr\uFFFDme br\uFFFDl\uFFFDe and a long enough line of ordinary ASCII text\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.file(c.name, c.content)
			res := e.ok(e.call(Read, "s1", m{"file_path": c.name}))
			if c.binary != (res.Metadata["binary"] == true) {
				t.Fatalf("binary = %v: %q", res.Metadata["binary"], res.Content)
			}
			if c.want != "" && res.Content != c.want {
				t.Fatalf("got %q want %q", res.Content, c.want)
			}
		})
	}
}

func TestReadNonUTF8Name(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.root, "caf\xe9.txt"), []byte("bytes \xff here\n"), 0o644); err != nil {
		t.Skip("file system refuses non-UTF-8 names:", err)
	}
	// A model cannot name the file (JSON strings are UTF-8), but the
	// search tools list it safely.
	res := e.ok(e.call(Glob, "s1", m{"pattern": "*.txt"}))
	if res.Content != filepath.Join(e.root, "caf\uFFFD.txt")+"\n" {
		t.Fatalf("glob %q", res.Content)
	}
	res = e.ok(e.call(Grep, "s1", m{"pattern": "bytes", "output_mode": "content"}))
	if res.Content != filepath.Join(e.root, "caf\uFFFD.txt")+":1:bytes \uFFFD here\n" {
		t.Fatalf("grep %q", res.Content)
	}
	res = e.ok(e.call(LS, "s1", m{}))
	if res.Content != "- "+e.root+"/\n  - caf\uFFFD.txt\n" {
		t.Fatalf("ls %q", res.Content)
	}
}
