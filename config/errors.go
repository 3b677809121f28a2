package config

import (
	"fmt"
	"sort"
	"strings"
)

// Issue is one problem found in a manifest.
type Issue struct {
	File  string // file name as given to Load or Parse
	Line  int    // 1-based line of the offending node; 0 if unknown
	Field string // dotted field path, e.g. "agents.writer.model"; "" for the whole file
	Msg   string
}

// String formats the issue as "file:line: field: message", leaving out the
// line when it is unknown and the field when it is empty.
func (i Issue) String() string {
	var b strings.Builder
	switch {
	case i.File != "" && i.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", i.File, i.Line)
	case i.File != "":
		fmt.Fprintf(&b, "%s: ", i.File)
	case i.Line > 0:
		fmt.Fprintf(&b, "line %d: ", i.Line)
	}
	if i.Field != "" {
		b.WriteString(i.Field)
		b.WriteString(": ")
	}
	b.WriteString(i.Msg)
	return b.String()
}

// Error is returned by Load and Parse for an invalid manifest. It lists every
// issue found, sorted by line.
type Error struct {
	Issues []Issue
}

// Error returns one line per issue.
func (e *Error) Error() string {
	lines := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		lines[i] = is.String()
	}
	return strings.Join(lines, "\n")
}

// err returns the collected issues as an *Error (sorted by line, exact
// duplicates removed), or nil when there are none.
func (p *parser) err() error {
	if len(p.issues) == 0 {
		return nil
	}
	sort.SliceStable(p.issues, func(i, j int) bool { return p.issues[i].Line < p.issues[j].Line })
	out := make([]Issue, 0, len(p.issues))
	seen := make(map[Issue]bool, len(p.issues))
	for _, is := range p.issues {
		if !seen[is] {
			seen[is] = true
			out = append(out, is)
		}
	}
	return &Error{Issues: out}
}

// sortedWarnings returns the warnings sorted by line, duplicates removed.
func (p *parser) sortedWarnings() []Issue {
	if len(p.warnings) == 0 {
		return nil
	}
	saved := p.issues
	p.issues = p.warnings
	defer func() { p.issues = saved }()
	return p.err().(*Error).Issues
}
