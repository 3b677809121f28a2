package readme

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the module root, relative to this package's directory (where go
// test runs it).
const root = "../.."

// maxREADME is the README's bound: a page a newcomer reads, with the rest
// in docs/. 15 KB read as 15,000 bytes, the stricter reading.
const maxREADME = 15000

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestREADMEIsShort(t *testing.T) {
	if n := len(read(t, "README.md")); n > maxREADME {
		t.Errorf("README.md is %d bytes, more than %d: move the detail into docs/ and link it", n, maxREADME)
	}
}

var (
	// [text](target) and ![alt](target); a target has no spaces.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// a docs/ path named in the text without a link (`docs/cli.md`).
	docsMention = regexp.MustCompile("(?:^|[\\s`(\\[])(docs/[A-Za-z0-9_./-]*[A-Za-z0-9_/-])")
)

// TestREADMELinks: every relative link leads to a file or directory of the
// repository, and a #fragment to a heading of the Markdown file it names;
// every docs/ path the text names exists.
func TestREADMELinks(t *testing.T) {
	text := read(t, "README.md")
	links := 0
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		links++
		path, frag, _ := strings.Cut(target, "#")
		if path == "" {
			path = "README.md"
		}
		if err := checkTarget(path, frag); err != nil {
			t.Errorf("README.md links to %s: %v", target, err)
		}
	}
	if links == 0 {
		t.Fatal("no relative links found in README.md: the link pattern is broken")
	}
	mentions := 0
	for _, m := range docsMention.FindAllStringSubmatch(text, -1) {
		mentions++
		if err := checkTarget(m[1], ""); err != nil {
			t.Errorf("README.md names %s: %v", m[1], err)
		}
	}
	if mentions == 0 {
		t.Fatal("no docs/ path found in README.md: the mention pattern is broken")
	}
}

// checkTarget says why path (relative to the module root) with the
// heading fragment frag cannot be followed.
func checkTarget(path, frag string) error {
	full := filepath.Join(root, filepath.FromSlash(path))
	if _, err := os.Stat(full); err != nil {
		return err
	}
	if frag == "" {
		return nil
	}
	if !strings.HasSuffix(path, ".md") {
		return fmt.Errorf("a fragment (#%s) into a file that is not Markdown", frag)
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return err
	}
	var have []string
	for _, h := range headings(string(b)) {
		if anchor(h) == frag {
			return nil
		}
		have = append(have, anchor(h))
	}
	return fmt.Errorf("no heading of %s has the anchor #%s (anchors: %s)", path, frag, strings.Join(have, ", "))
}

// headings are the texts of a Markdown file's ATX headings, outside code
// blocks.
func headings(md string) []string {
	var out []string
	fenced := false
	for line := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		hashes := len(line) - len(strings.TrimLeft(line, "#"))
		if hashes > 6 || (len(line) > hashes && line[hashes] != ' ') {
			continue
		}
		out = append(out, strings.TrimSpace(line[hashes:]))
	}
	return out
}

// anchor is the fragment a heading gets on the repository's web pages:
// lower case, letters, digits, spaces, hyphens and underscores kept (other
// punctuation, backquotes included, dropped), each space a hyphen.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// fenced returns the contents of the README's fenced blocks of language
// lang, in order.
func fenced(md, lang string) []string {
	var blocks []string
	var cur []string
	in := false
	for line := range strings.SplitSeq(md, "\n") {
		switch {
		case !in && line == "```"+lang:
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// TestREADMEProgramIsTheExample: the README's Go program is
// examples/library/main.go, which that package's Example runs, and the
// output the README shows for it is the output the Example expects. So
// the README's program compiles, runs and prints what it says.
func TestREADMEProgramIsTheExample(t *testing.T) {
	text := read(t, "README.md")
	programs := fenced(text, "go")
	if len(programs) != 1 {
		t.Fatalf("README.md has %d Go blocks; the test expects one, the program of examples/library", len(programs))
	}
	if want := read(t, "examples/library/main.go"); programs[0] != want {
		t.Errorf("README.md's Go program is not examples/library/main.go: copy the file into the README as it is\n--- README:\n%s--- main.go:\n%s", programs[0], want)
	}

	example := read(t, "examples/library/main_test.go")
	_, after, ok := strings.Cut(example, "\t// Output:\n")
	if !ok {
		t.Fatal("examples/library/main_test.go has no // Output: comment")
	}
	var want strings.Builder
	for line := range strings.SplitSeq(after, "\n") {
		l, ok := strings.CutPrefix(line, "\t// ")
		if !ok {
			break
		}
		want.WriteString(l + "\n")
	}
	_, rest, ok := strings.Cut(text, "\nIt prints:\n")
	if !ok {
		t.Fatal(`README.md does not say "It prints:" after its Go program`)
	}
	outputs := fenced(rest, "text")
	if len(outputs) == 0 || outputs[0] != want.String() {
		got := ""
		if len(outputs) > 0 {
			got = outputs[0]
		}
		t.Errorf("README.md shows the program printing\n%sbut its Example expects\n%s", got, want.String())
	}
}
