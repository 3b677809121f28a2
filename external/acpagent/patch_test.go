package acpagent

import "testing"

func TestApplyPatch(t *testing.T) {
	for _, c := range []struct {
		name, old, diff, want string
		fails                 bool
	}{
		{name: "new file", old: "", diff: "--- a\n+++ a\n@@ -0,0 +1,1 @@\n+hello\n", want: "hello\n"},
		{name: "replace a line", old: "one\nold\nthree\n",
			diff: "Index: f\n===\n--- f\n+++ f\n@@ -1,3 +1,3 @@\n one\n-old\n+new\n three\n", want: "one\nnew\nthree\n"},
		{name: "lines outside the hunk kept", old: "a\nb\nc\nd\ne\n", diff: "@@ -3,1 +3,2 @@\n-c\n+C\n+C2\n", want: "a\nb\nC\nC2\nd\ne\n"},
		{name: "no newline at the end", old: "x", diff: "@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n", want: "y"},
		{name: "adds the final newline", old: "x", diff: "@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x\n", want: "x\n"},
		{name: "made against other content", old: "one\nchanged\n", diff: "@@ -1,2 +1,2 @@\n one\n-old\n+new\n", fails: true},
		{name: "past the end", old: "a\n", diff: "@@ -5,1 +5,1 @@\n-a\n+b\n", fails: true},
		{name: "no hunk", old: "a\n", diff: "--- a\n+++ a\n", fails: true},
		{name: "bad header", old: "a\n", diff: "@@ -x +1 @@\n+a\n", fails: true},
	} {
		got, err := applyPatch(c.old, c.diff)
		if c.fails {
			if err == nil {
				t.Errorf("%s: applied, to %q", c.name, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}
