package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentpool/agentpool/internal/bounded"
)

// The Claude Code / Codex hook events the bridge runs (docs/hooks.md).
const (
	SessionStart       = "SessionStart"
	SessionEnd         = "SessionEnd"
	UserPromptSubmit   = "UserPromptSubmit"
	PreToolUse         = "PreToolUse"
	PermissionRequest  = "PermissionRequest"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	Notification       = "Notification"
	Stop               = "Stop"
	SubagentStart      = "SubagentStart"
	SubagentStop       = "SubagentStop"
	PreCompact         = "PreCompact"
)

// Events lists the events a settings file may configure.
var Events = []string{
	SessionStart, UserPromptSubmit, PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure,
	Notification, Stop, SubagentStart, SubagentStop, PreCompact, SessionEnd,
}

// DefaultTimeout is the timeout of a command hook that sets none.
const DefaultTimeout = 600 * time.Second

// Settings is the merged "hooks" configuration of one or more settings
// files: event name -> matcher groups, in file order.
type Settings struct {
	Hooks map[string][]MatcherGroup `json:"hooks"`
	// Ignored lists what was skipped or is not applied (unsupported events,
	// hook types and fields, settings other than hooks), one line each, with
	// its file: the warnings New logs once.
	Ignored []string `json:"-"`
}

// MatcherGroup is one entry of an event's list: a matcher and its hooks.
type MatcherGroup struct {
	// Matcher selects by tool name (PreToolUse, PermissionRequest,
	// PostToolUse, PostToolUseFailure), agent type (SubagentStart,
	// SubagentStop), source (SessionStart), reason (SessionEnd) or
	// notification type (Notification), as Claude Code does: empty or "*"
	// matches everything, a matcher of letters, digits, _ and | is a list
	// of exact names, anything else a regular expression that must occur in
	// the name. UserPromptSubmit and Stop ignore it.
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []Handler `json:"hooks"`
	// Source is the file the group was read from.
	Source string `json:"-"`
	// PluginRoot is the directory of the Claude Code plugin the file
	// belongs to (CLAUDE_PLUGIN_ROOT), "" when it belongs to none.
	PluginRoot string `json:"-"`
}

// Handler is one hook of a group. Only type "command" is run.
type Handler struct {
	Type string `json:"type"`
	// Command is a shell command (run with /bin/sh -c), or, with Args, the
	// executable to run directly with Args as its arguments (no shell).
	Command string   `json:"command"`
	Args    []string `json:"args,omitempty"`
	Timeout float64  `json:"timeout,omitempty"` // seconds; DefaultTimeout when 0
	// Async runs the hook in the background: the event does not wait for
	// it and its decision is not applied.
	Async bool `json:"async,omitempty"`
}

// Fields of a command hook that Claude Code knows and agentpool does not
// apply (warned about, then ignored).
var unappliedHandlerFields = map[string]string{
	"statusMessage": "agentpool shows no status line",
	"once":          "only skills use it",
	"asyncRewake":   "not supported",
	"shell":         "commands run with /bin/sh",
	"if":            "permission-rule filters are not supported; the hook runs for every match",
}

// settingsKeys are the top-level keys of a settings file that are no
// hook settings and need no warning.
// permissions are read by approval/settingsrules, enabledPlugins by the
// CLI's discovery of Claude Code's files (claudecode).
var quietKeys = map[string]bool{"$schema": true, "description": true, "hooks": true, "disableAllHooks": true, "permissions": true, "enabledPlugins": true}

// LoadSettings reads settings files (Claude Code settings.json, a hooks.json
// or a plugin's hooks/hooks.json) and merges their hooks: each event's
// groups are appended in the order of the files. A path that is a
// directory is a Claude Code plugin: its hooks/hooks.json is read, with
// CLAUDE_PLUGIN_ROOT the directory (none when it has no hooks/hooks.json).
// A file named hooks.json in a directory
// named hooks, or next to a .claude-plugin directory, belongs to the plugin
// of that directory. When any file sets disableAllHooks, no hook runs.
// The files are read within bounded.Config: 1 MiB each, 4 MiB together.
func LoadSettings(paths ...string) (Settings, error) {
	out := Settings{Hooks: map[string][]MatcherGroup{}}
	var errs []error
	var disabled []string
	budget := bounded.New(bounded.Config)
	for _, p := range paths {
		file, root := p, ""
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			file, root = filepath.Join(p, "hooks", "hooks.json"), p
			if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
				continue // a plugin without hooks (agents, commands only)
			}
		} else {
			root = pluginRoot(p)
		}
		data, err := budget.ReadFile(file)
		var bound *bounded.Error
		switch {
		case errors.As(err, &bound):
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("hooks settings: %w", err))
			continue
		}
		s, err := ParseSettings(file, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if root != "" {
			if abs, err := filepath.Abs(root); err == nil {
				root = abs
			}
			for _, gs := range s.Hooks {
				for i := range gs {
					gs[i].PluginRoot = root
				}
			}
		}
		if off, _ := disableAll(data); off {
			disabled = append(disabled, file)
		}
		out.merge(s)
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	if len(disabled) > 0 {
		out.Hooks = map[string][]MatcherGroup{}
		out.Ignored = append(out.Ignored, fmt.Sprintf("%s: disableAllHooks is true: no command hook runs", strings.Join(disabled, ", ")))
	}
	return out, nil
}

// pluginRoot is the plugin directory a hooks file belongs to, "" for none:
// the file's directory when it holds .claude-plugin, else the parent of a
// directory named hooks holding a hooks.json (a plugin's layout).
func pluginRoot(file string) string {
	dir := filepath.Dir(file)
	if fi, err := os.Stat(filepath.Join(dir, ".claude-plugin")); err == nil && fi.IsDir() {
		return dir
	}
	if filepath.Base(file) == "hooks.json" && filepath.Base(dir) == "hooks" {
		return filepath.Dir(dir)
	}
	return ""
}

func disableAll(data []byte) (bool, error) {
	var top struct {
		Disable bool `json:"disableAllHooks"`
	}
	err := json.Unmarshal(data, &top)
	return top.Disable, err
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
// (a bare hooks.json) is accepted too. Other settings keys, unsupported
// events, hook types and fields are listed in Ignored (once per file and
// field name). The document is held to bounded.Config (size, nesting,
// values) before it is decoded.
func ParseSettings(name string, data []byte) (Settings, error) {
	out := Settings{Hooks: map[string][]MatcherGroup{}}
	if err := checkJSON(name, data); err != nil {
		return out, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return out, jsonErr(name, data, 0, "", err)
	}
	w := &warnings{file: name}
	raw, ok := top["hooks"]
	if ok {
		var other []string
		for k := range top {
			if !quietKeys[k] {
				other = append(other, k)
			}
		}
		if len(other) > 0 {
			sort.Strings(other)
			out.Ignored = append(out.Ignored, fmt.Sprintf("%s: %s: agentpool reads only the hooks of a settings file; ignored", name, strings.Join(other, ", ")))
		}
	} else {
		for k := range top {
			if slices.Contains(Events, k) || looksLikeEvent(k) {
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
		if quietKeys[ev] && !slices.Contains(Events, ev) {
			continue // a bare hooks.json's description
		}
		if !slices.Contains(Events, ev) {
			out.Ignored = append(out.Ignored, fmt.Sprintf("%s: hooks.%s: event not supported, ignored", name, ev))
			continue
		}
		groups, gerrs := parseGroups(name, data, ev, events[ev], w)
		errs = append(errs, gerrs...)
		out.Hooks[ev] = groups
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	out.Ignored = append(out.Ignored, w.lines()...)
	return out, nil
}

// checkJSON holds one JSON document of file name to bounded.Config; the
// error names the file, the line and the bound.
func checkJSON(name string, data []byte) error {
	budget := bounded.New(bounded.Config)
	if err := budget.Take(int64(len(data))); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := budget.CheckJSON(data); err != nil {
		return fmt.Errorf("%s:%d: %w", name, err.(*bounded.Error).Line, err)
	}
	return nil
}

// looksLikeEvent tells a bare hooks.json's event names (PascalCase, such as
// an event agentpool does not support) from other settings keys.
func looksLikeEvent(k string) bool {
	return k != "" && k[0] >= 'A' && k[0] <= 'Z' && !strings.ContainsAny(k, "_-. ")
}

// parseGroups parses the matcher groups of one event.
func parseGroups(name string, data []byte, ev string, raw json.RawMessage, w *warnings) ([]MatcherGroup, []error) {
	var rawGroups []json.RawMessage
	if err := json.Unmarshal(raw, &rawGroups); err != nil {
		return nil, []error{jsonErr(name, data, offsetIn(data, raw), "hooks."+ev, err)}
	}
	var errs []error
	groups := make([]MatcherGroup, 0, len(rawGroups))
	for i, rg := range rawGroups {
		field := fmt.Sprintf("hooks.%s[%d]", ev, i)
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(rg, &keys); err != nil {
			errs = append(errs, jsonErr(name, data, offsetIn(data, rg), field, err))
			continue
		}
		for k := range keys {
			if k != "matcher" && k != "hooks" {
				w.add(field+"."+k, k, "unknown field, ignored")
			}
		}
		var g MatcherGroup
		if m, ok := keys["matcher"]; ok {
			if err := json.Unmarshal(m, &g.Matcher); err != nil {
				errs = append(errs, jsonErr(name, data, offsetIn(data, m), field+".matcher", err))
				continue
			}
		}
		g.Source = name
		if _, err := compileMatcher(g.Matcher); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s.matcher: invalid regular expression %q: %v", name, field, g.Matcher, err))
		}
		var rawHooks []json.RawMessage
		if hs, ok := keys["hooks"]; ok {
			if err := json.Unmarshal(hs, &rawHooks); err != nil {
				errs = append(errs, jsonErr(name, data, offsetIn(data, hs), field+".hooks", err))
				continue
			}
		}
		for j, rh := range rawHooks {
			h, keep, err := parseHandler(name, data, fmt.Sprintf("%s.hooks[%d]", field, j), rh, w)
			if err != nil {
				errs = append(errs, err)
			}
			if keep {
				g.Hooks = append(g.Hooks, h)
			}
		}
		groups = append(groups, g)
	}
	return groups, errs
}

// parseHandler parses one hook; keep is false for a hook that is skipped.
func parseHandler(name string, data []byte, field string, raw json.RawMessage, w *warnings) (h Handler, keep bool, err error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return h, false, jsonErr(name, data, offsetIn(data, raw), field, err)
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, false, jsonErr(name, data, offsetIn(data, raw), field, err)
	}
	if h.Type != "command" {
		w.note(fmt.Sprintf("%s: %s: hook type %q not supported, ignored", name, field, h.Type))
		return h, false, nil
	}
	for k := range keys {
		switch k {
		case "type", "command", "args", "timeout", "async":
		default:
			why, known := unappliedHandlerFields[k]
			if !known {
				why = "unknown field, ignored"
			} else {
				why = "not applied: " + why
			}
			w.add(field+"."+k, k, why)
		}
	}
	switch {
	case strings.TrimSpace(h.Command) == "":
		return h, false, fmt.Errorf("%s: %s.command: must not be empty", name, field)
	case h.Timeout < 0:
		return h, false, fmt.Errorf("%s: %s.timeout: must not be negative, got %v", name, field, h.Timeout)
	}
	if a, ok := keys["args"]; ok && h.Args == nil && !isNull(a) {
		h.Args = []string{} // "args": [] is the exec form with no arguments
	}
	return h, true, nil
}

// warnings collects the ignored fields of one file: one line per field
// name, however often it occurs.
type warnings struct {
	file  string
	order []string
	first map[string]string // field name -> first location
	why   map[string]string
	count map[string]int
	other []string
}

func (w *warnings) add(where, key, why string) {
	if w.first == nil {
		w.first, w.why, w.count = map[string]string{}, map[string]string{}, map[string]int{}
	}
	if _, seen := w.first[key]; !seen {
		w.order = append(w.order, key)
		w.first[key], w.why[key] = where, why
	}
	w.count[key]++
}

func (w *warnings) note(line string) { w.other = append(w.other, line) }

func (w *warnings) lines() []string {
	out := append([]string(nil), w.other...)
	sort.Strings(w.order)
	for _, k := range w.order {
		where := w.first[k]
		if n := w.count[k]; n > 1 {
			where += fmt.Sprintf(" (and %d more)", n-1)
		}
		out = append(out, fmt.Sprintf("%s: %s: %s", w.file, where, w.why[k]))
	}
	return out
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
	case strings.HasPrefix(goType, "[]"), strings.HasPrefix(goType, "json.RawMessage"):
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
