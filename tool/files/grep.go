package files

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

const grepDescription = "Search file contents with a regular expression (Go RE2 syntax: no look-around or " +
	"back-references; escape literal braces and dots, e.g. `interface\\{\\}`). Searches path (a file or a " +
	"directory, default the workspace root) recursively, skipping binary files and version-control " +
	"directories. Narrow it with glob (file names, e.g. `*.go` or `*.{ts,tsx}`; a pattern with `/` matches the " +
	"relative path) or type (a language: go, py, js, ts, rust, java, c, cpp, md, json, yaml, sh, ...). " +
	"output_mode: `files_with_matches` (default; file paths, most recently modified first), `content` " +
	"(matching lines as path:line:text, with -A/-B/-C lines of context) or `count` (matching lines per file). " +
	"-i ignores case; -n shows line numbers in content mode (default true); head_limit keeps the first N " +
	"lines or entries. Output beyond 30000 characters is cut."

type grepArgs struct {
	Pattern         string `json:"pattern" jsonschema:"description=The regular expression to search for (Go RE2 syntax)"`
	Path            string `json:"path,omitempty" jsonschema:"description=The file or directory to search (default: the workspace root)"`
	Glob            string `json:"glob,omitempty" jsonschema_description:"Only search files whose name (or relative path, when the glob has a /) matches this glob, like *.go or *.{ts,tsx}; a leading ! excludes them instead"`
	OutputMode      string `json:"output_mode,omitempty" jsonschema:"enum=content,enum=files_with_matches,enum=count,description=What to show (default files_with_matches)"`
	CaseInsensitive bool   `json:"-i,omitempty" jsonschema:"description=Ignore case"`
	LineNumbers     *bool  `json:"-n,omitempty" jsonschema:"description=Show line numbers in content mode (default true)"`
	After           int    `json:"-A,omitempty" jsonschema:"description=Lines of context to show after each match (content mode)"`
	Before          int    `json:"-B,omitempty" jsonschema:"description=Lines of context to show before each match (content mode)"`
	Context         int    `json:"-C,omitempty" jsonschema:"description=Lines of context to show before and after each match (content mode)"`
	Type            string `json:"type,omitempty" jsonschema_description:"Only search files of this type (go, py, js, ts, rust, java, c, cpp, md, json, yaml, sh, ...)"`
	HeadLimit       int    `json:"head_limit,omitempty" jsonschema_description:"Show only the first N lines (content) or entries (files_with_matches, count)"`
}

// fileTypes maps Grep's type to file name globs.
var fileTypes = map[string][]string{
	"go": {"*.go"}, "py": {"*.py", "*.pyi"}, "python": {"*.py", "*.pyi"},
	"js": {"*.js", "*.mjs", "*.cjs", "*.jsx"}, "ts": {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"rust": {"*.rs"}, "java": {"*.java"}, "kotlin": {"*.kt", "*.kts"}, "c": {"*.c", "*.h"},
	"cpp": {"*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h"}, "cs": {"*.cs"},
	"rb": {"*.rb"}, "ruby": {"*.rb"}, "php": {"*.php"}, "swift": {"*.swift"}, "scala": {"*.scala"},
	"md": {"*.md", "*.markdown"}, "markdown": {"*.md", "*.markdown"}, "json": {"*.json"},
	"yaml": {"*.yaml", "*.yml"}, "toml": {"*.toml"}, "xml": {"*.xml"}, "html": {"*.html", "*.htm"},
	"css": {"*.css", "*.scss", "*.sass", "*.less"}, "sh": {"*.sh", "*.bash", "*.zsh"},
	"sql": {"*.sql"}, "proto": {"*.proto"}, "lua": {"*.lua"}, "txt": {"*.txt"},
}

// grepOut collects Grep output within its limits.
type grepOut struct {
	sb      strings.Builder
	lines   int
	limit   int  // head_limit (0: none)
	limited bool // head_limit reached with more to show
	capped  bool // maxGrepOutput reached
}

// add appends a line; false once the output is full.
func (g *grepOut) add(s string) bool {
	if g.limited || g.capped {
		return false
	}
	if g.limit > 0 && g.lines == g.limit {
		g.limited = true
		return false
	}
	if g.sb.Len()+len(s)+1 > maxGrepOutput {
		g.capped = true
		return false
	}
	g.sb.WriteString(s + "\n")
	g.lines++
	return true
}

func (t *Toolset) grep(ctx context.Context, _ tool.Call, a grepArgs) tool.Result {
	if a.Pattern == "" {
		return tool.Errorf("pattern is required.")
	}
	mode := a.OutputMode
	switch mode {
	case "":
		mode = "files_with_matches"
	case "content", "files_with_matches", "count":
	default:
		return tool.Errorf("Unknown output_mode %q: use content, files_with_matches or count.", a.OutputMode)
	}
	if a.After < 0 || a.Before < 0 || a.Context < 0 || a.HeadLimit < 0 {
		return tool.Errorf("-A, -B, -C and head_limit must not be negative.")
	}
	expr := a.Pattern
	if a.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return tool.Errorf("Invalid regular expression (Go RE2 syntax): %v", err)
	}
	filter, errRes := fileFilter(a.Glob, a.Type)
	if errRes != nil {
		return *errRes
	}
	root, errRes := t.open(ctx)
	if errRes != nil {
		return *errRes
	}
	defer root.Close()
	from, errRes := confine(root, a.Path, "path")
	if errRes != nil {
		return *errRes
	}
	info, err := root.Stat(from)
	if err != nil {
		if os.IsNotExist(err) {
			return tool.Errorf("Path does not exist: %s", from)
		}
		return tool.Errorf("Cannot access %s: %v", from, err)
	}
	s := &searcher{root: root, re: re, mode: mode, numbers: a.LineNumbers == nil || *a.LineNumbers,
		before: max(a.Before, a.Context), after: max(a.After, a.Context), prefix: true}
	s.out.limit = a.HeadLimit
	s.buf = make([]byte, 0, 64<<10)
	type hit struct {
		path  string
		mtime time.Time
		count int
	}
	var hits []hit
	search := func(p, real string, mtime time.Time) error {
		n, err := s.file(ctx, p, real)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || n == 0 {
			return nil // an unreadable file: leave it out
		}
		hits = append(hits, hit{p, mtime, n})
		if mode == "content" && (s.out.limited || s.out.capped) {
			return errStop
		}
		return nil
	}
	if info.IsDir() {
		err = walk(ctx, root, from, nil, func(e *entry) error {
			if e.isDir || !filter(e.rel) {
				return nil
			}
			var mtime time.Time
			if fi := e.stat(); fi != nil {
				mtime = fi.ModTime()
			}
			return search(e.path, e.real, mtime)
		})
	} else if !info.Mode().IsRegular() {
		return tool.Errorf("%s is not a regular file (%v); it cannot be searched.", from, info.Mode().Type())
	} else {
		s.prefix = false
		err = search(from, from, info.ModTime())
	}
	if err != nil && !errors.Is(err, errStop) {
		return tool.Errorf("Grep failed: %v", err)
	}
	meta := map[string]any{"files": len(hits)}
	if len(hits) == 0 {
		meta["truncated"] = false
		return tool.Result{Content: fmt.Sprintf("No matches found for %q in %s.", a.Pattern, from), Metadata: meta}
	}
	switch mode {
	case "files_with_matches":
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].mtime.After(hits[j].mtime) })
		fmt.Fprintf(&s.out.sb, "Found %s\n", plural(len(hits), "file", "files"))
		for _, h := range hits {
			if !s.out.add(h.path) {
				break
			}
		}
	case "count":
		total := 0
		for _, h := range hits {
			total += h.count
			s.out.add(h.path + ":" + strconv.Itoa(h.count))
		}
		if !s.out.limited && !s.out.capped {
			s.out.sb.WriteString(fmt.Sprintf("\nFound %s in %s.\n", plural(total, "matching line", "matching lines"), plural(len(hits), "file", "files")))
		}
	}
	switch {
	case s.out.capped:
		fmt.Fprintf(&s.out.sb, "... [output cut at %d characters; narrow the search with path, glob or type, or use head_limit]\n", maxGrepOutput)
	case s.out.limited:
		fmt.Fprintf(&s.out.sb, "... [more results not shown: head_limit is %d]\n", a.HeadLimit)
	}
	meta["truncated"] = s.out.capped || s.out.limited
	return tool.Result{Content: s.out.sb.String(), Metadata: meta}
}

var errStop = errors.New("output full")

// fileFilter builds the file name filter of glob and type.
func fileFilter(glob, typ string) (func(rel string) bool, *tool.Result) {
	var globs []string
	if typ != "" {
		g, ok := fileTypes[strings.ToLower(typ)]
		if !ok {
			r := tool.Errorf("Unknown file type %q; use glob instead (for example \"*.ext\").", typ)
			return nil, &r
		}
		globs = g
	}
	negate := strings.HasPrefix(glob, "!")
	glob = strings.TrimPrefix(glob, "!")
	if glob != "" && !doublestar.ValidatePattern(glob) {
		r := tool.Errorf("Invalid glob %q.", glob)
		return nil, &r
	}
	match := func(g, rel string) bool {
		if strings.Contains(g, "/") {
			return doublestar.MatchUnvalidated(strings.TrimPrefix(g, "/"), rel)
		}
		return doublestar.MatchUnvalidated(g, path.Base(rel))
	}
	return func(rel string) bool {
		if glob != "" && match(glob, rel) == negate {
			return false
		}
		if globs == nil {
			return true
		}
		for _, g := range globs {
			if match(g, rel) {
				return true
			}
		}
		return false
	}, nil
}

// searcher searches files one after the other.
type searcher struct {
	root           *workspace.Root // what files are read through
	re             *regexp.Regexp
	mode           string
	numbers        bool
	before, after  int
	prefix         bool // show the file's path on content lines
	out            grepOut
	buf            []byte
	printed        bool // a content line was shown (for "--" separators)
	pending        []ctxLine
	lastShown      int
	afterRemaining int
}

type ctxLine struct {
	n    int
	text string
}

// maxMatchLine bounds the part of a line that is matched.
const maxMatchLine = 1 << 20

// file searches one file, shown as p and read from real (a symlink's
// target), and returns its number of matching lines; in files_with_matches
// mode it stops at the first. Binary files (a NUL byte in their first
// 8 KiB) count none.
func (s *searcher) file(ctx context.Context, p, real string) (int, error) {
	f, _, err := openRegular(s.root, real)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(sniffBytes)
	if bytes.IndexByte(head, 0) >= 0 {
		return 0, nil
	}
	s.pending, s.lastShown, s.afterRemaining = s.pending[:0], 0, 0
	count := 0
	for n := 1; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return count, ctx.Err()
		}
		line, _, ok, err := readLine(br, s.buf, maxMatchLine)
		if err != nil {
			return count, err
		}
		if !ok {
			return count, nil
		}
		s.buf = line[:0]
		if !s.re.Match(line) {
			if s.mode == "content" {
				s.context(p, n, line)
			}
			continue
		}
		count++
		switch s.mode {
		case "files_with_matches":
			return 1, nil
		case "content":
			if !s.show(p, n, line) {
				return count, nil
			}
		}
	}
}

// show prints a matching line with the context before it.
func (s *searcher) show(p string, n int, line []byte) bool {
	if s.before > 0 || s.after > 0 {
		first := n
		if len(s.pending) > 0 {
			first = s.pending[0].n
		}
		if s.printed && (s.lastShown == 0 || first > s.lastShown+1) && !s.out.add("--") {
			return false
		}
	}
	for _, c := range s.pending {
		if !s.out.add(s.format(p, c.n, '-', c.text)) {
			return false
		}
	}
	s.pending = s.pending[:0]
	s.printed, s.lastShown, s.afterRemaining = true, n, s.after
	return s.out.add(s.format(p, n, ':', display(line)))
}

// context keeps or prints a line that did not match.
func (s *searcher) context(p string, n int, line []byte) {
	if s.afterRemaining > 0 {
		s.afterRemaining--
		s.lastShown = n
		s.out.add(s.format(p, n, '-', display(line)))
		return
	}
	if s.before == 0 {
		return
	}
	if len(s.pending) == s.before {
		copy(s.pending, s.pending[1:])
		s.pending = s.pending[:len(s.pending)-1]
	}
	s.pending = append(s.pending, ctxLine{n, display(line)})
}

func (s *searcher) format(p string, n int, sep byte, text string) string {
	var b strings.Builder
	if s.prefix {
		b.WriteString(p)
		b.WriteByte(sep)
	}
	if s.numbers {
		b.WriteString(strconv.Itoa(n))
		b.WriteByte(sep)
	}
	b.WriteString(text)
	return b.String()
}

func display(line []byte) string {
	s, cut := cutRunes(line, maxGrepLineChars)
	if cut {
		s += " [... line truncated]"
	}
	return s
}
