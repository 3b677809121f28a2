package command

import (
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
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash|write_.*", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]},
      {"hooks": [{"type": "command", "command": "echo all"}, {"type": "prompt", "prompt": "judge"}]}
    ],
    "Notification": [{"hooks": [{"type": "command", "command": "notify"}]}]
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
	if len(s.Ignored) != 2 || !strings.Contains(s.Ignored[0], "hooks.Notification: event not supported") ||
		!strings.Contains(s.Ignored[1], `hooks.PreToolUse[1].hooks[1]: hook type "prompt" not supported`) {
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
	} {
		re, err := compileMatcher(tc.matcher)
		if err != nil {
			t.Fatal(err)
		}
		if got := re == nil || re.MatchString(tc.target); got != tc.want {
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
