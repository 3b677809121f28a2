package config

import (
	"testing"
)

// warningLines returns the manifest's warnings as "file:line: field: msg".
func warningLines(m *Manifest) []string {
	out := make([]string, len(m.Warnings))
	for i, w := range m.Warnings {
		out[i] = w.String()
	}
	return out
}

// Tools given as Python code are skipped, each with a warning at its line
// that names it; the agent keeps its other tools, and an agent left with
// none is warned about once more.
func TestPythonToolsAreSkipped(t *testing.T) {
	m := parseOK(t, `agents:
  opener:
    model: test
    tools:
      - webbrowser.open
      - type: import
        import_path: getpass.getuser
        name: whoami
        priority: 100
      - {import_path: "pkg:fn", enabled: false}
      - file_access
  lister:
    model: test
    toolsets:
      - type: import_tools
        tools:
          - import_path: os.listdir
            name: list_files
      - type: custom
        import_path: myapp.toolsets.Tools
`)
	if ts := m.Agents["opener"].Toolsets; len(ts) != 1 || ts[0].Type != ToolsetFileAccess {
		t.Errorf("opener's toolsets %+v, want file_access alone", ts)
	}
	if ts := m.Agents["lister"].Toolsets; len(ts) != 0 {
		t.Errorf("lister's toolsets %+v, want none", ts)
	}
	diffLines(t, warningLines(m), []string{
		`agentpool.yaml:5: agents.opener.tools[0]: skipped: tool "open" is the Python function webbrowser.open, which agentpool cannot load or run; agent "opener" runs without it`,
		`agentpool.yaml:7: agents.opener.tools[1]: skipped: tool "whoami" is the Python function getpass.getuser, which agentpool cannot load or run; agent "opener" runs without it`,
		`agentpool.yaml:17: agents.lister.toolsets[0].tools[0]: skipped: tool "list_files" is the Python function os.listdir, which agentpool cannot load or run; agent "lister" runs without it`,
		`agentpool.yaml:17: agents.lister.toolsets: agent "lister" has no tools left (each was Python code): it answers from its model alone; give it a toolset or an MCP server that does the job`,
		`agentpool.yaml:20: agents.lister.toolsets[1]: skipped: toolset myapp.toolsets.Tools is a Python class, which agentpool cannot load or run; agent "lister" runs without it`,
	})
}

// A Python tool entry still needs its import path, and a worker or MCP
// server counts as something left to call.
func TestPythonToolErrorsAndWhatIsLeft(t *testing.T) {
	diffLines(t, parseErr(t, "agents:\n  a:\n    model: test\n    tools:\n      - {type: import, name: f}\n      - {type: custom}\n"), []string{
		`agentpool.yaml:5: agents.a.tools[0]: missing required field "import_path" (the Python code of the tool)`,
		`agentpool.yaml:6: agents.a.tools[1]: missing required field "import_path" (the Python code of the tool)`,
	})
	m := parseOK(t, "agents:\n  a:\n    model: test\n    tools: [os.getcwd]\n    workers: [b]\n  b:\n    model: test\n    tools: [os.cpu_count]\n    mcp_servers: [\"uvx mcp-server-time\"]\n")
	diffLines(t, warningLines(m), []string{
		`agentpool.yaml:4: agents.a.tools[0]: skipped: tool "getcwd" is the Python function os.getcwd, which agentpool cannot load or run; agent "a" runs without it`,
		`agentpool.yaml:8: agents.b.tools[0]: skipped: tool "cpu_count" is the Python function os.cpu_count, which agentpool cannot load or run; agent "b" runs without it`,
	})
}

// An AG-UI agent's client-side tools are Python functions in AgentPool:
// skipped with a warning, as are its MCP servers; anything else there is
// refused.
func TestAGUIClientSideTools(t *testing.T) {
	m := parseOK(t, `agents:
  remote:
    type: agui
    endpoint: http://localhost:8000/agent/run
    tools:
      - import_path: myapp.tools.confirm_action
        name: confirm_action
    mcp_servers:
      - {name: fs, type: stdio, command: npx}
`)
	if m.Agents["remote"].External == nil || len(m.Agents["remote"].Toolsets) != 0 {
		t.Errorf("remote = %+v", m.Agents["remote"])
	}
	diffLines(t, warningLines(m), []string{
		`agentpool.yaml:6: agents.remote.tools[0]: skipped: client-side tool "confirm_action" is the Python function myapp.tools.confirm_action, which agentpool cannot load or run; AG-UI agent "remote" runs with its own tools only`,
		`agentpool.yaml:8: agents.remote.mcp_servers: skipped: agentpool offers an AG-UI agent no client-side tools, so these MCP servers are not started and "remote" runs with its own tools only; configure them on the remote agent`,
	})
	diffLines(t, parseErr(t, "agents:\n  r:\n    type: agui\n    endpoint: http://localhost:1/\n    toolsets: [file_access]\n"), []string{
		`agentpool.yaml:5: agents.r.toolsets[0]: client-side tools of an AG-UI agent are not supported: agentpool offers the remote agent none of its tools (AgentPool's are Python functions); the remote agent runs its own tools, so remove the entry`,
	})
}
