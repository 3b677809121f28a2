package gitignore

import (
	"path"
	"strings"
)

// MaxPatterns bounds the patterns a Matcher keeps (lines past it are not
// read), so that a huge .gitignore cannot make every path's match slow.
const MaxPatterns = 10_000

// Matcher holds the patterns of the .gitignore files of one tree. The
// zero value ignores nothing. It is not safe for concurrent Add.
type Matcher struct {
	byDir map[string][]pattern // by the slash path of their file's directory ("" for the root)
	n     int
}

// pattern is one line of a .gitignore.
type pattern struct {
	segs     []string // the glob's segments; "**" is any number of them
	negate   bool     // `!`: a match re-includes
	dirOnly  bool     // trailing `/`
	anchored bool     // a `/` at the start or in the middle: relative to its directory
}

// Add reads the .gitignore of directory dir (a slash path relative to
// the tree's root, "" for the root itself) from its content.
func (m *Matcher) Add(dir string, content []byte) {
	dir = strings.Trim(dir, "/")
	for _, line := range strings.Split(string(content), "\n") {
		if m.n >= MaxPatterns {
			return
		}
		p, ok := parse(line)
		if !ok {
			continue
		}
		if m.byDir == nil {
			m.byDir = map[string][]pattern{}
		}
		m.byDir[dir] = append(m.byDir[dir], p)
		m.n++
	}
}

// Len is the number of patterns read.
func (m *Matcher) Len() int { return m.n }

// parse reads one line; false for a blank line or a comment.
func parse(line string) (pattern, bool) {
	line = strings.TrimSuffix(line, "\r")
	line = trimSpaces(line)
	if line == "" || line[0] == '#' {
		return pattern{}, false
	}
	var p pattern
	switch {
	case line[0] == '!':
		p.negate, line = true, line[1:]
	case strings.HasPrefix(line, `\!`), strings.HasPrefix(line, `\#`):
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return pattern{}, false // "/" or "!": git matches nothing with it
	}
	if strings.Contains(line, "/") {
		p.anchored, line = true, strings.TrimPrefix(line, "/")
	}
	p.segs = strings.Split(line, "/")
	if !p.anchored {
		// No slash: the name at any depth below the directory.
		p.segs = []string{"**", line}
	}
	for i, seg := range p.segs {
		p.segs[i] = glob(seg)
	}
	return p, true
}

// trimSpaces removes trailing spaces that are not escaped with a
// backslash.
func trimSpaces(s string) string {
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		bs := 0
		for i := end - 2; i >= 0 && s[i] == '\\'; i-- {
			bs++
		}
		if bs%2 == 1 {
			break // "\ ": an escaped space ends the pattern
		}
		end--
	}
	return s[:end]
}

// Match reports whether the .gitignore files say rel (a slash path
// relative to the tree's root; a directory when dir) is ignored, its
// parent directories not considered.
func (m *Matcher) Match(rel string, dir bool) bool {
	if m.n == 0 {
		return false
	}
	rel = strings.Trim(rel, "/")
	names := strings.Split(rel, "/")
	ignored := false
	// Each directory above rel, the root first (base is rel up to it, no
	// copy): a deeper file's patterns come later, so they win.
	end := 0
	for k := range names {
		base := ""
		if k > 0 {
			end += len(names[k-1])
			base = rel[:end]
			end++ // the slash
		}
		for _, p := range m.byDir[base] {
			if (!p.dirOnly || dir) && matchSegs(p.segs, names[k:]) {
				ignored = !p.negate
			}
		}
	}
	return ignored
}

// Ignored is Match of rel and of each directory above it: a path under
// an ignored directory is ignored whatever its own patterns say, as git
// (which does not look into an ignored directory) has it.
func (m *Matcher) Ignored(rel string, dir bool) bool {
	rel = strings.Trim(rel, "/")
	for i := 0; i < len(rel); i++ {
		if rel[i] == '/' && m.Match(rel[:i], true) {
			return true
		}
	}
	return m.Match(rel, dir)
}

// matchSegs matches glob segments against path segments; "**" matches
// any number of them (none included).
func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				// A trailing "**" matches everything inside, not the
				// directory itself ("a/**" is not "a").
				return len(name) > 0
			}
			for i := 0; i <= len(name); i++ {
				if matchSegs(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 || !matchSeg(pat[0], name[0]) {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// matchSeg matches one segment with fnmatch rules: `*`, `?`, brackets
// (`[!...]` and `[^...]` negate), backslash escapes. A malformed pattern
// matches nothing.
func matchSeg(pat, name string) bool {
	ok, err := path.Match(pat, name)
	return err == nil && ok
}

// glob is a segment as path.Match takes it: git's `[!...]` is Go's
// `[^...]`.
func glob(seg string) string {
	if !strings.Contains(seg, "[!") {
		return seg
	}
	b := []byte(seg)
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // an escaped character
		case '[':
			if i+1 < len(b) && b[i+1] == '!' {
				b[i+1] = '^'
			}
			// Skip to the bracket's end: a "[!" inside is literal.
			for j := i + 2; j < len(b); j++ {
				if b[j] == ']' {
					i = j
					break
				}
			}
		}
	}
	return string(b)
}
