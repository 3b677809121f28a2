package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// execForm reports the exec-form hook entries of one event's groups: a
// command written as a list (["./check.sh", "--strict"]) or split into
// command and args. Claude Code and Codex run a hook's command as one
// shell command string, and so does the bridge; an exec-form entry would
// otherwise fail to load with a type error (a list) or run without its
// arguments (args, silently ignored). raw is the event's list of groups as
// it is in data; errors carry the line of the offending field. Groups that
// do not decode are left to the regular decoding, which reports them.
func execForm(name string, data []byte, ev string, raw json.RawMessage) []error {
	var groups []struct {
		Hooks []json.RawMessage `json:"hooks"`
	}
	if json.Unmarshal(raw, &groups) != nil {
		return nil
	}
	var errs []error
	from := offsetIn(data, raw)
	for i, g := range groups {
		for j, h := range g.Hooks {
			var fields map[string]json.RawMessage
			if json.Unmarshal(h, &fields) != nil {
				continue
			}
			at := from + offsetIn(data[from:], h)
			field := fmt.Sprintf("hooks.%s[%d].hooks[%d]", ev, i, j)
			line := func(v json.RawMessage) int { return lineAt(data, at+offsetIn(data[at:], v)) }
			cmd, args := fields["command"], fields["args"]
			switch {
			case bytes.HasPrefix(bytes.TrimSpace(cmd), []byte("[")):
				var words []string // best effort: a list of strings gives the suggestion
				_ = json.Unmarshal(cmd, &words)
				errs = append(errs, fmt.Errorf("%s:%d: %s.command: exec form (a list) is not supported: write the command as one shell command string%s",
					name, line(cmd), field, suchAs(words)))
			case args != nil:
				var s string
				var rest []string
				_ = json.Unmarshal(cmd, &s)
				_ = json.Unmarshal(args, &rest)
				example := ""
				if s != "" {
					example = suchAs(append([]string{s}, rest...))
				}
				errs = append(errs, fmt.Errorf("%s:%d: %s.args: exec form (command and args) is not supported: put the arguments in the command string%s",
					name, line(args), field, example))
			}
		}
	}
	return errs
}

// lineAt is the 1-based line of offset off in data.
func lineAt(data []byte, off int64) int {
	return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
}

// suchAs suggests the shell command string of an exec-form command, or ""
// when there is none to suggest.
func suchAs(words []string) string {
	if len(words) == 0 {
		return ""
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	return fmt.Sprintf(", such as %q", strings.Join(quoted, " "))
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./=:@%+,$-]+$`)

// shellQuote quotes a word for /bin/sh when it needs it. "$" is left
// unquoted so that ${CLAUDE_PROJECT_DIR} still expands.
func shellQuote(w string) string {
	if shellSafe.MatchString(w) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
