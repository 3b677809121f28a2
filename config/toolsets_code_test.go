package config

import (
	"reflect"
	"strings"
	"testing"
)

// AgentPool's code toolset loads as agentpool's code toolset; its tools:
// map turns tools off and its environment is warned as ignored.
func TestCodeToolset(t *testing.T) {
	m := mustParse(t, `
agents:
  a:
    model: test
    toolsets:
      - type: code
        tools: {ast_grep: false}
        environment: {type: local}
`)
	ts := m.Agents["a"].Toolsets
	if len(ts) != 1 || ts[0].Type != ToolsetCode || !reflect.DeepEqual(ts[0].Disabled, []string{"ast_grep"}) || ts[0].Line != 6 {
		t.Fatalf("toolsets = %+v", ts)
	}
	if len(m.Warnings) != 1 || m.Warnings[0].Line != 6 || !strings.Contains(m.Warnings[0].Msg, "ignored: environment") {
		t.Fatalf("warnings = %+v", m.Warnings)
	}
	diffLines(t, parseErr(t, "agents:\n  a:\n    model: test\n    toolsets:\n      - {type: code, languages: [go]}\n"), []string{
		`agentpool.yaml:5: agents.a.toolsets[0].languages: unknown field "languages"`,
	})
}

// The code and search tools ask by default: they change files or send
// the model's text off the machine.
func TestCodeAndSearchToolsAsk(t *testing.T) {
	for _, name := range []string{"format_code", "ast_grep", "web_search", "news_search"} {
		if got := DefaultApproval(name); got != ApprovalAsk {
			t.Errorf("DefaultApproval(%s) = %s, want ask", name, got)
		}
	}
}
