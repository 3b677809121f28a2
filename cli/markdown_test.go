package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderMarkdown(t *testing.T) {
	b, i, u, c, f := "\x1b[1m", "\x1b[3m", "\x1b[4m", "\x1b[36m", "\x1b[2m"
	r := "\x1b[0m"
	for _, tc := range []struct{ in, want string }{
		{"# Title **x**", "\x1b[1;4mTitle x" + r},
		{"### Smaller ###", b + "Smaller" + r},
		{"Some **bold**, *italic* and __strong__ _words_.", "Some " + b + "bold" + r + ", " + i + "italic" + r + " and " + b + "strong" + r + " " + i + "words" + r + "."},
		{"keep snake_case_names, 2 * 3 * 4 and a ** b", "keep snake_case_names, 2 * 3 * 4 and a ** b"},
		{"run `go **test**` now", "run " + c + "go **test**" + r + " now"},
		{"- one\n  * two\n+ three", "• one\n  • two\n• three"},
		{"*not a bullet*", i + "not a bullet" + r},
		{"> quoted **x**", f + "│" + r + " quoted " + b + "x" + r},
		{"---", f + strings.Repeat("─", 40) + r},
		{"see [the docs](https://example.org/d) or [https://x.y](https://x.y)", "see " + u + "the docs" + r + " (https://example.org/d) or " + u + "https://x.y" + r},
		{"```go\nfunc **main**() {}\n```\nafter", c + "  func **main**() {}" + r + "\nafter"},
		{"```\nunterminated # not a heading", c + "  unterminated # not a heading" + r},
		{"plain line", "plain line"},
	} {
		if got := renderMarkdown(tc.in); got != tc.want {
			t.Errorf("%q:\ngot  %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestRunAnswerMarkdown: on a terminal the answer's markdown is rendered;
// piped, it is exact; NO_COLOR keeps it plain on a terminal too.
func TestRunAnswerMarkdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := filepath.Join(dir, "m.yaml")
	os.WriteFile(m, []byte("agents:\n  a:\n    model: {type: test, custom_output_text: \"# Done\\n\\nSome **bold** text.\"}\n"), 0o644)
	r := runCLI(t, dir, "run", "-c", m, "--db", ":memory:", "go")
	if r.code != 0 || r.stdout != "# Done\n\nSome **bold** text.\n" {
		t.Errorf("piped: exit %d, stdout %q", r.code, r.stdout)
	}
	for _, c := range []struct {
		env  []string
		want string
	}{
		{nil, "\x1b[1;4mDone\x1b[0m\n\nSome \x1b[1mbold\x1b[0m text.\n"},
		{[]string{"NO_COLOR=1"}, "# Done\n\nSome **bold** text.\n"},
	} {
		p := startPTYWith(t, c.env, true, "run", "-c", m, "--db", ":memory:", "go")
		code, screen := p.wait(t)
		screen = strings.ReplaceAll(screen, "\r\n", "\n")
		if code != 0 || !strings.Contains(screen, c.want) {
			t.Errorf("on a terminal with %q: exit %d, want %q in:\n%q", c.env, code, c.want, screen)
		}
	}
}
