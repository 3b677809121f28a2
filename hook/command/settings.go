package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// The Claude Code / Codex hook events the bridge supports (docs/spec/HOOKS.md §4).
const (
	SessionStart     = "SessionStart"
	SessionEnd       = "SessionEnd"
	UserPromptSubmit = "UserPromptSubmit"
	PreToolUse       = "PreToolUse"
	PostToolUse      = "PostToolUse"
	Stop             = "Stop"
	SubagentStart    = "SubagentStart"
	SubagentStop     = "SubagentStop"
)

// Events lists the supported events.
var Events = []string{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SubagentStart, SubagentStop, SessionEnd}

// DefaultTimeout is the timeout of a command hook that sets none.
const DefaultTimeout = 600 * time.Second

// Settings is the merged "hooks" configuration of one or more settings
// files: event name -> matcher groups, in file order.
type Settings struct {
	Hooks map[string][]MatcherGroup `json:"hooks"`
	// Ignored lists what was skipped while loading (unsupported events or
	// hook types), one line each, with its file.
	Ignored []string `json:"-"`
}

// MatcherGroup is one entry of an event's list: a matcher and its hooks.
type MatcherGroup struct {
	// Matcher is a regular expression that must match the whole tool name
	// (PreToolUse, PostToolUse), agent type (SubagentStart, SubagentStop),
	// source (SessionStart) or reason (SessionEnd). Empty or "*" matches
	// everything; other events ignore it.
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []Handler `json:"hooks"`
	// Source is the file the group was read from.
	Source string `json:"-"`
}

// Handler is one hook of a group. Only type "command" is run.
type Handler struct {
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout,omitempty"` // seconds; DefaultTimeout when 0
}

// LoadSettings reads settings files (Claude Code settings.json or a
// hooks.json) and merges their hooks: each event's groups are appended in
// the order of the files.
func LoadSettings(paths ...string) (Settings, error) {
	out := Settings{Hooks: map[string][]MatcherGroup{}}
	var errs []error
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("hooks settings: %w", err))
			continue
		}
		s, err := ParseSettings(p, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out.merge(s)
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	return out, nil
}

func (s *Settings) merge(o Settings) {
	if s.Hooks == nil {
		s.Hooks = map[string][]MatcherGroup{}
	}
	for ev, gs := range o.Hooks {
		s.Hooks[ev] = append(s.Hooks[ev], gs...)
	}
	s.Ignored = append(s.Ignored, o.Ignored...)
}

// ParseSettings parses one settings file. name is used in errors, which
// read "name:line: field: message" like the manifest's. The hooks are the
// top-level "hooks" object; a file whose top level is itself the event map
// (a bare hooks.json) is accepted too. Other settings keys are ignored.
func ParseSettings(name string, data []byte) (Settings, error) {
	out := Settings{Hooks: map[string][]MatcherGroup{}}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return out, jsonErr(name, data, 0, "", err)
	}
	raw, ok := top["hooks"]
	if !ok {
		for k := range top {
			if slices.Contains(Events, k) {
				raw, _ = json.Marshal(top)
				ok = true
				break
			}
		}
	}
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return out, nil
	}
	var events map[string]json.RawMessage
	if err := json.Unmarshal(raw, &events); err != nil {
		return out, jsonErr(name, data, offsetIn(data, raw), "hooks", err)
	}
	names := make([]string, 0, len(events))
	for k := range events {
		names = append(names, k)
	}
	sort.Strings(names)
	var errs []error
	for _, ev := range names {
		if !slices.Contains(Events, ev) {
			out.Ignored = append(out.Ignored, fmt.Sprintf("%s: hooks.%s: event not supported, ignored", name, ev))
			continue
		}
		if bad := execForm(name, data, ev, events[ev]); len(bad) > 0 {
			errs = append(errs, bad...)
			continue
		}
		var groups []MatcherGroup
		if err := json.Unmarshal(events[ev], &groups); err != nil {
			errs = append(errs, jsonErr(name, data, offsetIn(data, events[ev]), "hooks."+ev, err))
			continue
		}
		for i := range groups {
			g := &groups[i]
			g.Source = name
			field := fmt.Sprintf("hooks.%s[%d]", ev, i)
			if _, err := compileMatcher(g.Matcher); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s.matcher: invalid regular expression %q: %v", name, field, g.Matcher, err))
			}
			kept := g.Hooks[:0]
			for j, h := range g.Hooks {
				hf := fmt.Sprintf("%s.hooks[%d]", field, j)
				switch {
				case h.Type != "command":
					out.Ignored = append(out.Ignored, fmt.Sprintf("%s: %s: hook type %q not supported, ignored", name, hf, h.Type))
					continue
				case strings.TrimSpace(h.Command) == "":
					errs = append(errs, fmt.Errorf("%s: %s.command: must not be empty", name, hf))
					continue
				case h.Timeout < 0:
					errs = append(errs, fmt.Errorf("%s: %s.timeout: must not be negative, got %v", name, hf, h.Timeout))
					continue
				}
				kept = append(kept, h)
			}
			g.Hooks = kept
		}
		out.Hooks[ev] = groups
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	return out, nil
}

// offsetIn finds where a raw sub-document (copied verbatim by the decoder)
// starts in data; 0 when it cannot be found.
func offsetIn(data, raw []byte) int64 {
	if i := bytes.Index(data, raw); i >= 0 {
		return int64(i)
	}
	return 0
}

// jsonErr reports a JSON error with the line it happened on; base is the
// offset in data of the document the error's offset is relative to.
func jsonErr(name string, data []byte, base int64, field string, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	msg := err.Error()
	switch {
	case errors.As(err, &se):
		off = se.Offset
		msg = "invalid JSON: " + se.Error()
	case errors.As(err, &te):
		off = te.Offset
		f := field
		if te.Field != "" {
			f = join(field, te.Field)
		}
		field = f
		msg = fmt.Sprintf("expected %s, got JSON %s", jsonKind(te.Type.String()), te.Value)
	}
	loc := name
	if off >= 0 {
		off += base
		loc = fmt.Sprintf("%s:%d", name, 1+bytes.Count(data[:min(int(off), len(data))], []byte("\n")))
	}
	if field != "" {
		return fmt.Errorf("%s: %s: %s", loc, field, msg)
	}
	return fmt.Errorf("%s: %s", loc, msg)
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "command."), strings.HasPrefix(goType, "struct"):
		return "an object"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case goType == "string":
		return "a string"
	case goType == "float64", strings.HasPrefix(goType, "int"):
		return "a number"
	case goType == "bool":
		return "true or false"
	}
	return goType
}

// compileMatcher compiles a matcher; nil matches everything.
func compileMatcher(m string) (*regexp.Regexp, error) {
	m = strings.TrimSpace(m)
	if m == "" || m == "*" {
		return nil, nil
	}
	return regexp.Compile(`^(?:` + m + `)$`)
}
