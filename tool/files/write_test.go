package files

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	e := newEnv(t)
	abs := filepath.Join(e.root, "a/b/new.txt")

	// A new file, with its parent directories.
	res := e.ok(e.call(Write, "s1", m{"file_path": "a/b/new.txt", "content": "one\ntwo\n"}))
	if res.Content != "Created "+abs+" (2 lines, 8 bytes)." {
		t.Fatalf("got %q", res.Content)
	}
	if got := e.content(abs); got != "one\ntwo\n" {
		t.Fatalf("file holds %q", got)
	}
	if len(res.Diffs) != 1 || res.Diffs[0].Path != abs || res.Diffs[0].OldText != nil || res.Diffs[0].NewText != "one\ntwo\n" {
		t.Fatalf("diffs %+v", res.Diffs)
	}
	if len(res.Locations) != 1 || res.Locations[0].Path != abs || res.Metadata["created"] != true {
		t.Fatalf("locations %+v metadata %+v", res.Locations, res.Metadata)
	}
	if info, _ := os.Stat(abs); info.Mode().Perm() != 0o644 {
		t.Fatalf("new file mode %v", info.Mode())
	}

	// Its writer may overwrite it without reading it.
	res = e.ok(e.call(Write, "s1", m{"file_path": abs, "content": "three\n"}))
	if res.Content != "Overwrote "+abs+" (1 line, 6 bytes)." || res.Diffs[0].OldText == nil || *res.Diffs[0].OldText != "one\ntwo\n" {
		t.Fatalf("got %q, diffs %+v", res.Content, res.Diffs)
	}

	// Another session has not read it.
	e.fails(e.call(Write, "s2", m{"file_path": abs, "content": "x"}), "File has not been read yet. Read it first before writing to it.")
	if e.content(abs) != "three\n" {
		t.Fatal("refused write changed the file")
	}

	// An existing file must be read first, and not changed since.
	script := e.file("run.sh", "#!/bin/sh\necho hi\n")
	if err := os.Chmod(script, 0o750); err != nil {
		t.Fatal(err)
	}
	e.fails(e.call(Write, "s1", m{"file_path": "run.sh", "content": "x"}), errNotRead)
	e.ok(e.call(Read, "s1", m{"file_path": "run.sh"}))
	e.file("run.sh", "#!/bin/sh\necho changed\n")
	e.fails(e.call(Write, "s1", m{"file_path": "run.sh", "content": "x"}), "File has been modified since read")
	e.ok(e.call(Read, "s1", m{"file_path": "run.sh", "limit": 1})) // a partial read counts
	e.ok(e.call(Write, "s1", m{"file_path": "run.sh", "content": "#!/bin/sh\necho new\n"}))
	if info, _ := os.Stat(script); info.Mode().Perm() != 0o750 {
		t.Fatalf("mode not kept: %v", info.Mode())
	}
	if e.content(script) != "#!/bin/sh\necho new\n" {
		t.Fatalf("content %q", e.content(script))
	}
	// Atomic: no temporary file is left behind.
	ents, _ := os.ReadDir(e.root)
	for _, d := range ents {
		if strings.HasSuffix(d.Name(), ".tmp") {
			t.Fatalf("temporary file left: %s", d.Name())
		}
	}

	e.fails(e.call(Write, "s1", m{"file_path": "a", "content": "x"}), filepath.Join(e.root, "a")+" is a directory")
}

func TestWriteTouchedButUnchanged(t *testing.T) {
	e := newEnv(t)
	p := e.file("f.txt", "same\n")
	e.ok(e.call(Read, "s1", m{"file_path": "f.txt"}))
	// The modification time moves but the content is the same (a
	// formatter that rewrote the file unchanged): still fresh.
	e.touch(p, time.Hour)
	e.ok(e.call(Write, "s1", m{"file_path": "f.txt", "content": "other\n"}))
	// Same size, new time, new content: modified.
	e.ok(e.call(Read, "s1", m{"file_path": "f.txt"}))
	e.file("f.txt", "OTHER\n")
	e.touch(p, 2*time.Hour)
	e.fails(e.call(Write, "s1", m{"file_path": "f.txt", "content": "x"}), errModified)
	// Same size and the very same time, but new content: still modified.
	e.ok(e.call(Read, "s1", m{"file_path": "f.txt"}))
	e.file("f.txt", "ABCDE\n")
	e.touch(p, 2*time.Hour)
	e.fails(e.call(Edit, "s1", m{"file_path": "f.txt", "old_string": "A", "new_string": "a"}), errModified)
	e.fails(e.call(Write, "s1", m{"file_path": "f.txt", "content": "x"}), errModified)
}

func TestWriteDiffCap(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("0123456789abcde\n", 70_000) // 1,120,000 bytes
	res := e.ok(e.call(Write, "s1", m{"file_path": "big.txt", "content": big}))
	if res.Diffs != nil || strings.Contains(res.Content, "diff") {
		t.Fatalf("diff of a file over 1 MiB: %d diffs, %q", len(res.Diffs), res.Content)
	}
	res = e.ok(e.call(Write, "s1", m{"file_path": "big.txt", "content": "small\n"}))
	if res.Diffs != nil {
		t.Fatal("diff whose old text is over 1 MiB")
	}
	res = e.ok(e.call(Edit, "s1", m{"file_path": "big.txt", "old_string": "small", "new_string": "tiny"}))
	if len(res.Diffs) != 1 || *res.Diffs[0].OldText != "small\n" || res.Diffs[0].NewText != "tiny\n" {
		t.Fatalf("diffs %+v", res.Diffs)
	}
}

func TestEdit(t *testing.T) {
	const text = "alpha\nbeta\ngamma\nbeta\n"
	cases := []struct {
		name    string
		read    bool   // read the file first
		change  string // then change it on disk to this
		args    m
		wantErr string
		want    string // the file afterwards
		result  string
	}{
		{name: "not read", args: m{"old_string": "alpha", "new_string": "ALPHA"},
			wantErr: "File has not been read yet. Read it first before writing to it.", want: text},
		{name: "changed since read", read: true, change: "alpha\nbeta\ngamma\nBETA\n", args: m{"old_string": "alpha", "new_string": "ALPHA"},
			wantErr: "File has been modified since read", want: "alpha\nbeta\ngamma\nBETA\n"},
		{name: "unique", read: true, args: m{"old_string": "gamma", "new_string": "GAMMA"},
			want: "alpha\nbeta\nGAMMA\nbeta\n", result: "Edited {F}: 1 replacement (first at line 3). The edited region now reads:\n" +
				"     1\talpha\n     2\tbeta\n     3\tGAMMA\n     4\tbeta\n"},
		{name: "not unique", read: true, args: m{"old_string": "beta", "new_string": "BETA"},
			wantErr: "Found 2 matches of the string to replace in {F}, but replace_all is false. To replace every match, set replace_all to true; to replace only one, add more surrounding context", want: text},
		{name: "replace all", read: true, args: m{"old_string": "beta", "new_string": "BETA", "replace_all": true},
			want: "alpha\nBETA\ngamma\nBETA\n", result: "Edited {F}: 2 replacements (first at line 2)."},
		{name: "context makes it unique", read: true, args: m{"old_string": "gamma\nbeta", "new_string": "gamma\ndelta"},
			want: "alpha\nbeta\ngamma\ndelta\n"},
		{name: "not found", read: true, args: m{"old_string": "omega", "new_string": "x"},
			wantErr: "String to replace not found in file {F}", want: text},
		{name: "same strings", read: true, args: m{"old_string": "alpha", "new_string": "alpha"},
			wantErr: "No changes to make: old_string and new_string are exactly the same.", want: text},
		{name: "empty old string on a non-empty file", read: true, args: m{"old_string": "", "new_string": "x"},
			wantErr: "old_string is empty", want: text},
		{name: "delete", read: true, args: m{"old_string": "alpha\n", "new_string": ""}, want: "beta\ngamma\nbeta\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			p := e.file("f.txt", text)
			if c.read {
				e.ok(e.call(Read, "s1", m{"file_path": "f.txt"}))
			}
			if c.change != "" {
				e.file("f.txt", c.change)
			}
			c.args["file_path"] = "f.txt"
			res := e.call(Edit, "s1", c.args)
			if c.wantErr != "" {
				e.fails(res, strings.ReplaceAll(c.wantErr, "{F}", p))
			} else {
				e.ok(res)
				if c.result != "" && !strings.HasPrefix(res.Content, strings.ReplaceAll(c.result, "{F}", p)) {
					t.Fatalf("result %q", res.Content)
				}
				if len(res.Diffs) != 1 || *res.Diffs[0].OldText != text || res.Diffs[0].NewText != c.want {
					t.Fatalf("diffs %+v", res.Diffs)
				}
			}
			if got := e.content(p); got != c.want {
				t.Fatalf("file holds %q, want %q", got, c.want)
			}
		})
	}
}

func TestEditDetails(t *testing.T) {
	e := newEnv(t)
	p := e.file("f.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\n")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	e.ok(e.call(Read, "s1", m{"file_path": "f.txt"}))
	res := e.ok(e.call(Edit, "s1", m{"file_path": "f.txt", "old_string": "e\n", "new_string": "E1\nE2\n"}))
	want := "Edited " + p + ": 1 replacement (first at line 5). The edited region now reads:\n" +
		"     2\tb\n     3\tc\n     4\td\n     5\tE1\n     6\tE2\n     7\tf\n     8\tg\n     9\th\n"
	if res.Content != want {
		t.Fatalf("got %q", res.Content)
	}
	if len(res.Locations) != 1 || res.Locations[0] != (struct {
		Path string `json:"path"`
		Line int    `json:"line,omitempty"`
	}{p, 5}) || res.Metadata["replacements"] != 1 || res.Metadata["line"] != 5 {
		t.Fatalf("locations %+v metadata %+v", res.Locations, res.Metadata)
	}
	// An edit counts as a read: a second edit needs no new Read.
	e.ok(e.call(Edit, "s1", m{"file_path": "f.txt", "old_string": "E2", "new_string": "E3"}))
	if got := e.content(p); got != "a\nb\nc\nd\nE1\nE3\nf\ng\nh\ni\n" {
		t.Fatalf("file %q", got)
	}
	if info, _ := os.Stat(p); info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", info.Mode())
	}
	// Creating a file with an empty old_string.
	res = e.ok(e.call(Edit, "s1", m{"file_path": "new/g.txt", "old_string": "", "new_string": "hello\n"}))
	if e.content("new/g.txt") != "hello\n" || res.Diffs[0].OldText != nil {
		t.Fatalf("%q %+v", res.Content, res.Diffs)
	}
	e.fails(e.call(Edit, "s1", m{"file_path": "missing.txt", "old_string": "x", "new_string": "y"}), "File does not exist: "+filepath.Join(e.root, "missing.txt"))
}

func TestEditLineEndings(t *testing.T) {
	e := newEnv(t)
	p := e.file("win.txt", "one\r\ntwo\r\nthree\r\n")
	e.ok(e.call(Read, "s1", m{"file_path": "win.txt"}))
	e.ok(e.call(Edit, "s1", m{"file_path": "win.txt", "old_string": "one\ntwo", "new_string": "uno\ndos\nmas"}))
	if got := e.content(p); got != "uno\r\ndos\r\nmas\r\nthree\r\n" {
		t.Fatalf("file %q", got)
	}
	e.ok(e.call(Edit, "s1", m{"file_path": "win.txt", "old_string": "three", "new_string": "tres\ncuatro"}))
	if got := e.content(p); got != "uno\r\ndos\r\nmas\r\ntres\r\ncuatro\r\n" {
		t.Fatalf("file %q", got)
	}
	q := e.file("unix.txt", "one\ntwo\n")
	e.ok(e.call(Read, "s1", m{"file_path": "unix.txt"}))
	e.ok(e.call(Edit, "s1", m{"file_path": "unix.txt", "old_string": "one\r\ntwo", "new_string": "1\r\n2"}))
	if got := e.content(q); got != "1\n2\n" {
		t.Fatalf("file %q", got)
	}
}

func TestEditNonUTF8Content(t *testing.T) {
	e := newEnv(t)
	p := e.file("l1.txt", "caf\xe9 = 1\n")
	e.ok(e.call(Read, "s1", m{"file_path": "l1.txt"}))
	res := e.ok(e.call(Edit, "s1", m{"file_path": "l1.txt", "old_string": "= 1", "new_string": "= 2"}))
	if got := e.content(p); got != "caf\xe9 = 2\n" {
		t.Fatalf("file %q", got)
	}
	if *res.Diffs[0].OldText != "caf\uFFFD = 1\n" || res.Diffs[0].NewText != "caf\uFFFD = 2\n" {
		t.Fatalf("diffs %+v", res.Diffs)
	}
}

func TestSessionsAreSeparate(t *testing.T) {
	e := newEnv(t)
	e.file("f.txt", "x\n")
	e.ok(e.call(Read, "ses_a", m{"file_path": "f.txt"}))
	e.fails(e.call(Edit, "ses_b", m{"file_path": "f.txt", "old_string": "x", "new_string": "y"}), errNotRead)
	e.ok(e.call(Edit, "ses_a", m{"file_path": "f.txt", "old_string": "x", "new_string": "y"}))
	// ses_b reads, ses_a edits again: ses_b's read is stale.
	e.ok(e.call(Read, "ses_b", m{"file_path": "f.txt"}))
	e.ok(e.call(Edit, "ses_a", m{"file_path": "f.txt", "old_string": "y", "new_string": "zz"}))
	e.fails(e.call(Edit, "ses_b", m{"file_path": "f.txt", "old_string": "zz", "new_string": "w"}), errModified)
}

func TestConcurrentEdits(t *testing.T) {
	e := newEnv(t)
	var sb strings.Builder
	for i := 0; i < 20; i++ {
		sb.WriteString("line " + string(rune('a'+i)) + "\n")
	}
	p := e.file("f.txt", sb.String())
	e.ok(e.call(Read, "s1", m{"file_path": "f.txt"}))
	var wg sync.WaitGroup
	results := make([]bool, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := string(rune('a' + i))
			res := e.call(Edit, "s1", m{"file_path": "f.txt", "old_string": "line " + c + "\n", "new_string": "LINE " + c + "\n"})
			results[i] = !res.IsError
		}()
	}
	wg.Wait()
	for i, ok := range results {
		if !ok {
			t.Fatalf("edit %d failed", i)
		}
	}
	if got := e.content(p); got != strings.ReplaceAll(sb.String(), "line", "LINE") {
		t.Fatalf("lost edits: %q", got)
	}
}
