package opencode

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestUnifiedDiff(t *testing.T) {
	const head = "Index: /w/f\n===================================================================\n--- /w/f\n+++ /w/f\n"
	for _, tc := range []struct {
		name, old, new, want string
		add, del             int
	}{
		{"created", "", "a\nb\n", "@@ -0,0 +1,2 @@\n+a\n+b\n", 2, 0},
		{"emptied", "a\n", "", "@@ -1,1 +0,0 @@\n-a\n", 0, 1},
		{"unchanged", "a\n", "a\n", "", 0, 0},
		{"one line", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\n2\n3\n4\n5\nsix\n7\n8\n9\n10\n",
			"@@ -2,9 +2,9 @@\n 2\n 3\n 4\n 5\n-6\n+six\n 7\n 8\n 9\n 10\n", 1, 1},
		{"no newline at end", "a\nb", "a\nc", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n", 1, 1},
		{"newline added", "a", "a\n", "@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+a\n", 1, 1},
		{"two hunks", lines(1, 20), strings.Replace(strings.Replace(lines(1, 20), "2\n", "two\n", 1), "19\n", "nineteen\n", 1),
			"@@ -1,6 +1,6 @@\n 1\n-2\n+two\n 3\n 4\n 5\n 6\n@@ -15,6 +15,6 @@\n 15\n 16\n 17\n 18\n-19\n+nineteen\n 20\n", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, add, del := unifiedDiff("/w/f", tc.old, tc.new)
			if got != head+tc.want || add != tc.add || del != tc.del {
				t.Fatalf("got +%d -%d\n%s\nwant +%d -%d\n%s", add, del, got, tc.add, tc.del, head+tc.want)
			}
		})
	}
}

func lines(from, to int) string {
	var sb strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&sb, "%d\n", i)
	}
	return sb.String()
}

// TestUnifiedDiffApplies: applying the diff to the old text gives the new
// one, whatever the texts (and however many edits: past maxDiffEdits the
// middle is replaced whole).
func TestUnifiedDiffApplies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		line := rapid.SampledFrom([]string{"a\n", "b\n", "c\n", "\n", "a", "b"})
		text := func(label string) string {
			var sb strings.Builder
			for _, l := range rapid.SliceOfN(line, 0, 60).Draw(t, label) {
				sb.WriteString(strings.TrimSuffix(l, "\n") + "\n")
			}
			s := sb.String()
			if rapid.Bool().Draw(t, label+" cut") {
				s = strings.TrimSuffix(s, "\n")
			}
			return s
		}
		old, new := text("old"), text("new")
		patch, add, del := unifiedDiff("f", old, new)
		got, gotAdd, gotDel, err := applyPatch(old, patch)
		if err != nil {
			t.Fatalf("%v\n%s", err, patch)
		}
		if got != new || gotAdd != add || gotDel != del {
			t.Fatalf("applied: %q, want %q (+%d -%d, counted +%d -%d)\n%s", got, new, gotAdd, gotDel, add, del, patch)
		}
	})
}

func TestDiffFallsBackOnManyEdits(t *testing.T) {
	var a, b strings.Builder
	for i := range 3 * maxDiffEdits {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	patch, add, del := unifiedDiff("f", a.String(), b.String())
	got, _, _, err := applyPatch(a.String(), patch)
	if err != nil || got != b.String() || add != 3*maxDiffEdits || del != 3*maxDiffEdits {
		t.Fatalf("+%d -%d %v", add, del, err)
	}
}

// applyPatch applies a unified diff of one file to old.
func applyPatch(old, patch string) (string, int, int, error) {
	src := splitLines(old)
	pl := strings.Split(strings.TrimSuffix(patch, "\n"), "\n")
	var out []string
	at, add, del := 0, 0, 0
	for i := 4; i < len(pl); i++ {
		l := pl[i]
		if strings.HasPrefix(l, "@@ -") {
			f := strings.Fields(l)
			start, _ := strconv.Atoi(strings.Split(f[1][1:], ",")[0])
			if n, _ := strconv.Atoi(strings.Split(f[1], ",")[1]); n > 0 {
				start--
			}
			if start < at || start > len(src) {
				return "", 0, 0, fmt.Errorf("hunk %q out of order", l)
			}
			out = append(out, src[at:start]...)
			at = start
			continue
		}
		text := l[1:] + "\n"
		if i+1 < len(pl) && pl[i+1] == `\ No newline at end of file` {
			text = l[1:]
			i++
		}
		switch l[0] {
		case ' ', '-':
			if at >= len(src) || src[at] != text {
				return "", 0, 0, fmt.Errorf("line %d: %q does not match %q", at+1, text, src[min(at, len(src)-1)])
			}
			at++
			if l[0] == ' ' {
				out = append(out, text)
			} else {
				del++
			}
		case '+':
			out = append(out, text)
			add++
		default:
			return "", 0, 0, fmt.Errorf("bad line %q", l)
		}
	}
	out = append(out, src[at:]...)
	return strings.Join(out, ""), add, del, nil
}
