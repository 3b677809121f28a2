package command

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseSettings(t *testing.T) {
	s, err := ParseSettings("settings.json", []byte(`{
  "permissions": {"allow": ["Bash"]},
  "env": {"A": "1"},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash|write_.*", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]},
      {"hooks": [{"type": "command", "command": "echo all"}, {"type": "prompt", "prompt": "judge"}]}
    ],
    "TeammateIdle": [{"hooks": [{"type": "command", "command": "notify"}]}]
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]MatcherGroup{"PreToolUse": {
		{Matcher: "Bash|write_.*", Hooks: []Handler{{Type: "command", Command: "./check.sh", Timeout: 30}}, Source: "settings.json"},
		{Hooks: []Handler{{Type: "command", Command: "echo all"}}, Source: "settings.json"},
	}}
	if !reflect.DeepEqual(s.Hooks, want) {
		t.Errorf("Hooks = %+v\nwant %+v", s.Hooks, want)
	}
	// Settings other than hooks are not applied: said once, with the keys
	// (permissions are applied, by approval/settingsrules).
	if len(s.Ignored) != 3 || !strings.Contains(s.Ignored[0], "settings.json: env: agentpool reads only the hooks") ||
		!strings.Contains(s.Ignored[1], "hooks.TeammateIdle: event not supported") ||
		!strings.Contains(s.Ignored[2], `hooks.PreToolUse[1].hooks[1]: hook type "prompt" not supported`) {
		t.Errorf("Ignored = %q", s.Ignored)
	}

	// A bare hooks.json (the event map at the top level).
	s, err = ParseSettings("hooks.json", []byte(`{"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}`))
	if err != nil || len(s.Hooks["Stop"]) != 1 {
		t.Errorf("bare hooks.json: %+v, %v", s, err)
	}
	// No hooks at all.
	if s, err := ParseSettings("settings.json", []byte(`{"model": "x"}`)); err != nil || len(s.Hooks) != 0 {
		t.Errorf("no hooks: %+v, %v", s, err)
	}
}

func TestParseSettingsErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"syntax", "{\n  \"hooks\": {\n    \"Stop\": [}\n}", "s.json:3: invalid JSON"},
		{"type", "{\"hooks\": {\n\"Stop\": {\"matcher\": 1}}}", "s.json:2: hooks.Stop: expected a list"},
		{"matcher", `{"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}`, `s.json: hooks.PreToolUse[0].matcher: invalid regular expression "("`},
		{"empty command", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": " "}]}]}}`, "s.json: hooks.Stop[0].hooks[0].command: must not be empty"},
		{"negative timeout", `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}}`, "s.json: hooks.Stop[0].hooks[0].timeout: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSettings("s.json", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadSettingsMerges(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	b := filepath.Join(dir, "b.json")
	os.WriteFile(a, []byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "first"}]}]}}`), 0o644)
	os.WriteFile(b, []byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "second"}]}], "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "pre", "timeout": 2.5}]}]}}`), 0o644)
	s, err := LoadSettings(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Hooks["Stop"]) != 2 || s.Hooks["Stop"][0].Hooks[0].Command != "first" || s.Hooks["Stop"][1].Source != b {
		t.Errorf("Stop groups %+v", s.Hooks["Stop"])
	}
	br, err := New(s, Options{ProjectDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if br.maxTimeout(Stop) != DefaultTimeout || br.maxTimeout(PreToolUse) != 2500*time.Millisecond {
		t.Errorf("timeouts %s %s", br.maxTimeout(Stop), br.maxTimeout(PreToolUse))
	}
	if _, err := LoadSettings(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file: no error")
	}
}

func TestMatcher(t *testing.T) {
	for _, tc := range []struct {
		matcher, target string
		want            bool
	}{
		{"", "anything", true},
		{"*", "anything", true},
		{"Bash", "Bash", true},
		{"Bash", "BashOutput", false}, // a plain name matches exactly
		{"Bash|write_.*", "write_file", true},
		{"ask_.*", "task", false},
		{"Edit|Write", "Write", true}, // a list of exact names
		{"Edit|Write", "MultiEdit", false},
		{"mcp__memory__.*", "mcp__memory__create_entities", true}, // a regular expression
		{"Notebook.*", "NotebookEdit", true},
		{"^Read$", "Read", true},
		{"^Read$", "ReadMany", false},
		{"startup|resume", "resume", true},
	} {
		m, err := compileMatcher(tc.matcher)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.match(tc.target); got != tc.want {
			t.Errorf("matcher %q on %q = %v, want %v", tc.matcher, tc.target, got, tc.want)
		}
	}
}

func TestInterpret(t *testing.T) {
	for _, tc := range []struct {
		name, event string
		r           result
		want        verdict
	}{
		{"exit 2 pre", PreToolUse, result{exitCode: 2, stderr: "no\n"}, verdict{decision: vDeny, reason: "no"}},
		{"exit 2 stop", Stop, result{exitCode: 2, stderr: "more"}, verdict{decision: vBlock, reason: "more"}},
		{"exit 1", Stop, result{exitCode: 1, stderr: "boom"}, verdict{decision: vError, note: "exit code 1: boom"}},
		{"plain prompt context", UserPromptSubmit, result{stdout: "ctx\n"}, verdict{decision: vNone, context: "ctx"}},
		{"plain ignored", PreToolUse, result{stdout: "hello"}, verdict{decision: vNone}},
		{"json suppress and message", PostToolUse, result{stdout: `{"suppressOutput": true, "systemMessage": "hi", "decision": "block", "reason": "r"}`},
			verdict{decision: vBlock, reason: "r", systemMessage: "hi", suppress: true}},
		{"continue false wins", Stop, result{stdout: `{"continue": false, "decision": "block", "reason": "r"}`},
			verdict{decision: vStop, reason: "r", stopReason: "stopped by a Stop hook"}},
		{"mismatched event", PreToolUse, result{stdout: `{"hookSpecificOutput": {"hookEventName": "Stop", "permissionDecision": "deny"}}`},
			verdict{decision: vNone, note: `hookSpecificOutput for "Stop" ignored in PreToolUse`}},
		{"bad json type", Stop, result{stdout: `{"continue": "yes"}`}, verdict{decision: vError}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := interpret(tc.event, tc.r)
			if tc.want.decision == vError && tc.want.note == "" {
				if got.decision != vError {
					t.Errorf("got %+v, want an error", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// The settings forms in use: the exec form ("args"), async, timeout, a
// plugin's hooks.json; fields Claude Code knows but agentpool does not
// apply, and unknown ones, are warned about once per file and field.
func TestParseSettingsForms(t *testing.T) {
	s, err := ParseSettings("s.json", []byte(`{"hooks": {
  "PreToolUse": [{"matcher": "Bash", "hooks": [
    {"type": "command", "command": "./guard", "args": ["--strict", "${CLAUDE_PROJECT_DIR}"], "timeout": 5, "statusMessage": "checking"},
    {"type": "command", "command": "log", "async": true, "statusMessage": "logging", "colour": "red"}
  ]}],
  "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt", "args": []}], "comment": "x"}],
  "PreCompact": [{"hooks": [{"type": "command", "command": "save"}]}]
}}`))
	if err != nil {
		t.Fatal(err)
	}
	pre := s.Hooks["PreToolUse"][0].Hooks
	if !reflect.DeepEqual(pre[0], Handler{Type: "command", Command: "./guard", Args: []string{"--strict", "${CLAUDE_PROJECT_DIR}"}, Timeout: 5}) ||
		!pre[1].Async || pre[1].Args != nil {
		t.Errorf("PreToolUse hooks %+v", pre)
	}
	if post := s.Hooks["PostToolUse"][0].Hooks[0]; post.Args == nil || len(post.Args) != 0 {
		t.Errorf(`"args": [] is the exec form without arguments: %+v`, post)
	}
	want := []string{
		"s.json: hooks.PreToolUse[0].hooks[1].colour: unknown field, ignored",
		"s.json: hooks.PostToolUse[0].comment: unknown field, ignored",
		"s.json: hooks.PreToolUse[0].hooks[0].statusMessage (and 1 more): not applied: agentpool shows no status line",
	}
	if !reflect.DeepEqual(s.Ignored, want) {
		t.Errorf("Ignored:\n%s\nwant:\n%s", strings.Join(s.Ignored, "\n"), strings.Join(want, "\n"))
	}
}

// A plugin: a directory in hooks.settings reads its hooks/hooks.json; a
// hooks.json inside a plugin's hooks directory belongs to the plugin too.
// disableAllHooks in any file turns every hook off.
func TestLoadSettingsPluginsAndDisable(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "plug")
	os.MkdirAll(filepath.Join(plugin, ".claude-plugin"), 0o755)
	os.MkdirAll(filepath.Join(plugin, "hooks"), 0o755)
	os.WriteFile(filepath.Join(plugin, ".claude-plugin", "plugin.json"), []byte(`{"name": "plug"}`), 0o644)
	os.WriteFile(filepath.Join(plugin, "hooks", "hooks.json"), []byte(`{"description": "d", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/x"}]}]}}`), 0o644)
	plain := filepath.Join(dir, "settings.json")
	os.WriteFile(plain, []byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "y"}]}]}}`), 0o644)
	// A plugin without hooks (agents or commands only) adds none.
	bare := filepath.Join(dir, "bare")
	os.MkdirAll(filepath.Join(bare, ".claude-plugin"), 0o755)
	if s, err := LoadSettings(bare, plain); err != nil || len(s.Hooks["Stop"]) != 1 {
		t.Errorf("plugin without hooks: %+v, %v", s, err)
	}
	for _, p := range []string{plugin, filepath.Join(plugin, "hooks", "hooks.json")} {
		s, err := LoadSettings(p, plain)
		if err != nil {
			t.Fatal(err)
		}
		stop := s.Hooks["Stop"]
		if len(stop) != 2 || stop[0].PluginRoot != plugin || stop[1].PluginRoot != "" || len(s.Ignored) != 0 {
			t.Errorf("%s: %+v, ignored %q", p, stop, s.Ignored)
		}
	}
	off := filepath.Join(dir, "off.json")
	os.WriteFile(off, []byte(`{"disableAllHooks": true}`), 0o644)
	s, err := LoadSettings(plain, off)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Hooks) != 0 || len(s.Ignored) != 1 || !strings.Contains(s.Ignored[0], "disableAllHooks") {
		t.Errorf("disableAllHooks: %+v %q", s.Hooks, s.Ignored)
	}
}

// New logs what is not applied once, whatever the number of hooks that
// carry it.
func TestNewWarnsOnce(t *testing.T) {
	var buf bytes.Buffer
	s, err := ParseSettings("s.json", []byte(`{"env": {}, "hooks": {"Stop": [
	  {"hooks": [{"type": "command", "command": "a", "once": true}, {"type": "command", "command": "b", "once": true}]},
	  {"hooks": [{"type": "command", "command": "c", "once": true}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(s, Options{ProjectDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&buf, nil))}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "once"); n != 1 || strings.Count(buf.String(), "env") != 1 {
		t.Errorf("warnings:\n%s", buf.String())
	}
}
