package gitignore_test

import (
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/internal/gitignore"
)

// A case is a tree's .gitignore files (by directory) and paths of the
// tree (a trailing slash: a directory) with whether git ignores each,
// parent directories considered (Ignored). The expectations are git's
// documented semantics (gitignore(5)); TestAgainstGit checks them with
// the real git.
type giCase struct {
	name    string
	files   map[string]string
	ignored []string
	kept    []string
}

var cases = []giCase{
	{
		name:    "name at any depth",
		files:   map[string]string{"": "*.log\nnode_modules\n"},
		ignored: []string{"a.log", "x/y/b.log", "node_modules/", "node_modules/p/index.js", "src/node_modules/", "src/node_modules/q.js"},
		kept:    []string{"a.txt", "log", "x/alog.txt", "src/"},
	},
	{
		name:    "comments blank lines and escapes",
		files:   map[string]string{"": "# a comment\n\n\\#hash\n\\!bang\ntrail   \nspace\\ \n"},
		ignored: []string{"#hash", "!bang", "trail", "space "},
		kept:    []string{"# a comment", "a", "trail   "},
	},
	{
		name:    "directories only",
		files:   map[string]string{"": "build/\n"},
		ignored: []string{"build/", "build/out.o", "src/build/", "src/build/x"},
		kept:    []string{"x/build", "src/y/build"},
	},
	{
		name:    "anchored",
		files:   map[string]string{"": "/root.txt\ndoc/*.html\n/out/\n"},
		ignored: []string{"root.txt", "doc/a.html", "out/", "out/x"},
		kept:    []string{"sub/root.txt", "doc/sub/a.html", "sub/doc/a.html", "sub/out/", "sub/out/x"},
	},
	{
		name:    "double star",
		files:   map[string]string{"": "**/logs\na/**/b\ncache/**\n**/tmp/*.t\n"},
		ignored: []string{"logs/", "x/logs/", "x/y/logs/z", "a/b", "a/x/b", "a/x/y/b", "cache/x", "cache/y/z", "tmp/a.t", "p/tmp/b.t"},
		kept:    []string{"cache/", "x/a/b", "ab", "tmp/x/a.t"},
	},
	{
		name:    "negation",
		files:   map[string]string{"": "*.txt\n!keep.txt\ndist/\n!dist/keep.js\ncache/**\n!cache/keep\n"},
		ignored: []string{"a.txt", "sub/b.txt", "dist/", "dist/keep.js", "cache/x"},
		kept:    []string{"keep.txt", "sub/keep.txt", "cache/keep", "cache/"},
	},
	{
		name: "nested files win over their parents",
		files: map[string]string{
			"":        "*.gen\n/top\n",
			"pkg":     "!*.gen\nlocal/\n/only-here\n",
			"pkg/sub": "*.gen\n",
		},
		ignored: []string{"a.gen", "top", "pkg/local/", "pkg/x/local/", "pkg/only-here", "pkg/sub/c.gen", "other/a.gen"},
		kept:    []string{"pkg/b.gen", "pkg/x/b.gen", "pkg/top", "pkg/x/only-here", "other/local/", "other/only-here"},
	},
	{
		name:    "brackets and question marks",
		files:   map[string]string{"": "file[0-9].o\n[!a]x\n?.q\n"},
		ignored: []string{"file1.o", "bx", "a.q", "d/file2.o"},
		kept:    []string{"filea.o", "ax", "ab.q", "x"},
	},
}

// matcher builds the case's Matcher.
func matcher(c giCase) *gitignore.Matcher {
	var m gitignore.Matcher
	for dir, content := range c.files {
		m.Add(dir, []byte(content))
	}
	return &m
}

func TestMatcher(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := matcher(c)
			for _, p := range c.ignored {
				if !m.Ignored(strings.TrimSuffix(p, "/"), strings.HasSuffix(p, "/")) {
					t.Errorf("%q is not ignored", p)
				}
			}
			for _, p := range c.kept {
				if m.Ignored(strings.TrimSuffix(p, "/"), strings.HasSuffix(p, "/")) {
					t.Errorf("%q is ignored", p)
				}
			}
		})
	}
}

// Match alone does not look at the parents: a walk that skips ignored
// directories gives git's answer with it.
func TestMatchIsOnePath(t *testing.T) {
	var m gitignore.Matcher
	m.Add("", []byte("dist/\n!dist/keep.js\n"))
	if !m.Match("dist", true) || m.Match("dist/keep.js", false) || !m.Ignored("dist/keep.js", false) {
		t.Error("Match looked at the parent, or Ignored did not")
	}
	if m.Match("dist", false) {
		t.Error("a directory pattern matched a file")
	}
	var zero gitignore.Matcher
	if zero.Match("a", false) || zero.Ignored("a/b", false) || zero.Len() != 0 {
		t.Error("the zero Matcher ignores something")
	}
}

// A huge .gitignore is read up to MaxPatterns.
func TestMaxPatterns(t *testing.T) {
	var b strings.Builder
	for range gitignore.MaxPatterns + 10 {
		b.WriteString("x\n")
	}
	b.WriteString("last\n")
	var m gitignore.Matcher
	m.Add("", []byte(b.String()))
	if m.Len() != gitignore.MaxPatterns || m.Match("last", false) {
		t.Errorf("%d patterns kept; last matched %v", m.Len(), m.Match("last", false))
	}
}

// TestAgainstGit checks every case's expectations with git check-ignore
// in a repository holding the case's tree.
func TestAgainstGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			git := func(stdin string, args ...string) (string, error) {
				cmd := exec.Command(gitBin, args...)
				cmd.Dir = dir
				cmd.Stdin = strings.NewReader(stdin)
				cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
				out, err := cmd.Output()
				return string(out), err
			}
			if _, err := git("", "init", "-q"); err != nil {
				t.Fatal(err)
			}
			for d, content := range c.files {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, d, ".gitignore"), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			all := append(slices.Clone(c.ignored), c.kept...)
			for _, p := range all {
				full := filepath.Join(dir, filepath.FromSlash(p))
				if strings.HasSuffix(p, "/") {
					if err := os.MkdirAll(full, 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var in strings.Builder
			for _, p := range all {
				in.WriteString(strings.TrimSuffix(p, "/") + "\x00")
			}
			out, err := git(in.String(), "check-ignore", "--no-index", "--stdin", "-z")
			var exit *exec.ExitError
			if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) { // 1: none ignored
				t.Fatalf("git check-ignore: %v", err)
			}
			gitIgnored := map[string]bool{}
			for _, p := range strings.Split(out, "\x00") {
				if p != "" {
					gitIgnored[path.Clean(p)] = true
				}
			}
			for _, p := range c.ignored {
				if !gitIgnored[strings.TrimSuffix(p, "/")] {
					t.Errorf("git does not ignore %q", p)
				}
			}
			for _, p := range c.kept {
				if gitIgnored[strings.TrimSuffix(p, "/")] {
					t.Errorf("git ignores %q", p)
				}
			}
		})
	}
}
