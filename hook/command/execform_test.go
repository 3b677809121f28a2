package command

import (
	"strings"
	"testing"
)

// An exec-form hook (the command as a list, or split into command and
// args, as MCP servers are written) is an error at its line: the bridge
// runs one shell command string, and would otherwise fail to load the file
// with a puzzling type error or run the command without its arguments.
func TestParseSettingsExecForm(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"command list", `{
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}, {"type": "command", "command": ["./check.sh", "--strict"]}]}
    ]
  }
}`, `s.json:4: hooks.PreToolUse[0].hooks[1].command: exec form (a list) is not supported: write the command as one shell command string, such as "./check.sh --strict"`},
		{"command and args", `{"hooks": {
  "Stop": [
    {"hooks": [
      {"type": "command", "command": "notify", "args": ["--done"]}
    ]}
  ]
}}`, `s.json:4: hooks.Stop[0].hooks[0].args: exec form (command and args) is not supported: put the arguments in the command string, such as "notify --done"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSettings("s.json", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
}
