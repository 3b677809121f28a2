package command

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// matcher is a compiled matcher, with Claude Code's rules: empty or "*"
// matches everything; a matcher made only of letters, digits, _ and | is
// a list of exact names ("Bash" matches Bash and not BashOutput, "Edit|Write"
// matches either); anything else is a regular expression that must occur
// in the name ("mcp__memory__.*", "Notebook.*"). Go's regular expressions
// (RE2) stand in for JavaScript's; an expression RE2 cannot compile (a
// lookahead) is an error when the settings load.
type matcher struct {
	all   bool
	names []string
	re    *regexp.Regexp
}

// Compiled on first use, not at package init, which every process
// linking the package pays (agentpool version too).
var plainMatcher = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_|]+$`) })

func compileMatcher(m string) (matcher, error) {
	m = strings.TrimSpace(m)
	if m == "" || m == "*" {
		return matcher{all: true}, nil
	}
	if plainMatcher().MatchString(m) {
		return matcher{names: strings.Split(m, "|")}, nil
	}
	re, err := regexp.Compile(m)
	if err != nil {
		return matcher{}, err
	}
	return matcher{re: re}, nil
}

// match reports whether any of targets (a name and its aliases: a tool's
// Claude Code name and its agentpool name) is selected.
func (m matcher) match(targets ...string) bool {
	if m.all {
		return true
	}
	for _, t := range targets {
		if t == "" {
			continue
		}
		if m.re != nil && m.re.MatchString(t) || m.re == nil && slices.Contains(m.names, t) {
			return true
		}
	}
	return false
}
