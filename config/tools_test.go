package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBuiltinToolsets(t *testing.T) {
	m := mustParse(t, `
agents:
  a:
    model: test
    tools: [file_access, {type: execution}, plan, fetch, subagent]
  b:
    model: test
    toolsets: [bash, process_management, todo]
`)
	var got []string
	for _, ts := range m.Agents["a"].Toolsets {
		got = append(got, ts.Type)
	}
	if want := []string{"file_access", "execution", "plan", "fetch", "subagent"}; !reflect.DeepEqual(got, want) {
		t.Errorf("a: toolsets %v, want %v", got, want)
	}
	got = nil
	for _, ts := range m.Agents["b"].Toolsets {
		got = append(got, ts.Type)
	}
	// bash and process_management are two names of one toolset.
	if want := []string{"execution", "plan"}; !reflect.DeepEqual(got, want) {
		t.Errorf("b: toolsets %v, want %v", got, want)
	}
}

func TestFetchAllowedHosts(t *testing.T) {
	m := mustParse(t, `
agents:
  a:
    model: test
    tools:
      - {type: fetch, allowed_hosts: [localhost, 127.0.0.1, "10.0.0.0/8", "fd00::/8", wiki.internal.]}
  b:
    model: test
    tools: [fetch]
`)
	if got, want := m.Agents["a"].Toolsets[0].AllowedHosts, []string{"localhost", "127.0.0.1", "10.0.0.0/8", "fd00::/8", "wiki.internal."}; !reflect.DeepEqual(got, want) {
		t.Errorf("a: allowed_hosts %v, want %v", got, want)
	}
	if got := m.Agents["b"].Toolsets[0].AllowedHosts; got != nil {
		t.Errorf("b: allowed_hosts %v, want none", got)
	}

	// Each bad entry is reported at its line, with what it may be.
	diffLines(t, parseErr(t, `agents:
  a:
    model: test
    tools:
      - type: fetch
        allowed_hosts:
          - localhost
          - "http://10.0.0.1:8080/"
          - "*.example.org"
          - "10.0.0.0/40"
      - {type: file_access, allowed_hosts: [localhost]}
      - {type: web_fetch, allowed_hosts: localhost}
`), []string{
		`agentpool.yaml:8: agents.a.tools[0].allowed_hosts[1]: "http://10.0.0.1:8080/" is a URL; write a host name (localhost), an IP address (127.0.0.1) or a CIDR network (10.0.0.0/8), without scheme, port or path`,
		`agentpool.yaml:9: agents.a.tools[0].allowed_hosts[2]: "*.example.org" is not a host name (localhost), an IP address (127.0.0.1) or a CIDR network (10.0.0.0/8), without scheme, port or path (wildcards are not supported)`,
		`agentpool.yaml:10: agents.a.tools[0].allowed_hosts[3]: "10.0.0.0/40" is not a CIDR network: netip.ParsePrefix("10.0.0.0/40"): prefix length out of range`,
		`agentpool.yaml:11: agents.a.tools[1].allowed_hosts: unknown field "allowed_hosts"`,
		`agentpool.yaml:12: agents.a.tools[2].allowed_hosts: expected a list, got "localhost"`,
	})
}

func TestWorkspace(t *testing.T) {
	m := mustParse(t, "workspace: ../repo\nagents: {a: {model: test}}\n")
	if m.Workspace != "../repo" {
		t.Errorf("Workspace = %q", m.Workspace)
	}
	m.Path = "/x/y/agentpool.yaml"
	if got := m.ResolvePath(m.Workspace); got != "/x/repo" {
		t.Errorf("ResolvePath = %q", got)
	}
}

func TestMCPServerForms(t *testing.T) {
	m := mustParse(t, `
mcp_servers:
  - "npx -y @modelcontextprotocol/server-everything"
  - name: fs
    type: stdio
    command: node
    args: [server.js, "/tmp/root"]
    environment: {DEBUG: "1"}
    timeout: 30
  - {name: remote, type: streamable-http, url: "http://127.0.0.1:3001/mcp", headers: {Authorization: "Bearer x"}, timeout: 1m}
  - {url: "http://127.0.0.1:3002/sse", type: sse, enabled: false}
  - "uvx 'mcp-server-git' --repository \"my repo\""
agents:
  a:
    model: test
    mcp_servers:
      - "npx -y @modelcontextprotocol/server-everything"
`)
	want := []MCPServer{
		{Name: "server-everything", Type: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}, Enabled: true, Line: 3},
		{Name: "fs", Type: "stdio", Command: "node", Args: []string{"server.js", "/tmp/root"}, Env: map[string]string{"DEBUG": "1"}, Timeout: 30 * time.Second, Enabled: true, Line: 4},
		{Name: "remote", Type: "streamable-http", URL: "http://127.0.0.1:3001/mcp", Headers: map[string]string{"Authorization": "Bearer x"}, Timeout: time.Minute, Enabled: true, Line: 10},
		{Name: "sse", Type: "sse", URL: "http://127.0.0.1:3002/sse", Enabled: false, Line: 11},
		{Name: "my_repo", Type: "stdio", Command: "uvx", Args: []string{"mcp-server-git", "--repository", "my repo"}, Enabled: true, Line: 12},
	}
	if !reflect.DeepEqual(m.MCPServers, want) {
		t.Errorf("MCPServers:\n got %+v\nwant %+v", m.MCPServers, want)
	}
	// A derived name that repeats gets a suffix.
	if got := m.Agents["a"].MCPServers; len(got) != 1 || got[0].Name != "server-everything-2" {
		t.Errorf("agent servers = %+v", got)
	}
}

func TestMCPConfigFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AP_TEST_TOKEN", "s3cret")
	os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {
  "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything", "${AP_TEST_DIR:-/srv}"], "env": {"TOKEN": "${AP_TEST_TOKEN}"}},
  "api": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${AP_TEST_TOKEN}"}}
}}`), 0o644)
	manifest := filepath.Join(dir, "agentpool.yaml")
	os.WriteFile(manifest, []byte("mcp_servers: {config: .mcp.json}\nagents: {a: {model: test, mcp_servers: [{config: .mcp.json}]}}\n"), 0o644)
	m, err := Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.MCPServers) != 2 {
		t.Fatalf("servers = %+v", m.MCPServers)
	}
	api, ev := m.MCPServers[0], m.MCPServers[1] // sorted by name
	if api.Name != "api" || api.Type != MCPStreamableHTTP || api.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("api = %+v", api)
	}
	if ev.Name != "everything" || ev.Type != MCPStdio || ev.Args[2] != "/srv" || ev.Env["TOKEN"] != "s3cret" || ev.Source != filepath.Join(dir, ".mcp.json") {
		t.Errorf("everything = %+v", ev)
	}
	if got := m.Agents["a"].MCPServers; len(got) != 2 || got[0].Name != "api-2" {
		t.Errorf("agent servers = %+v", got)
	}
}

func TestMCPErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"mcpServers": {"x": {"command": "${AP_SURELY_UNSET_VAR}"}}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(`mcp_servers:
  - {name: a, command: x, url: "http://h"}
  - {name: b, type: carrier-pigeon, command: x}
  - {name: c}
  - {name: "bad name", command: x}
  - {name: d, type: sse, url: "ftp://h"}
  - {config: missing.json}
  - {config: bad.json}
  - 'unterminated "quote'
agents: {a: {model: test}}
`), 0o644)
	_, err := Load(filepath.Join(dir, "agentpool.yaml"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`:2: mcp_servers[0]: "url" and "headers" apply to sse and streamable-http servers, not stdio`,
		`:3: mcp_servers[1].type: unknown MCP server type "carrier-pigeon"`,
		`:4: mcp_servers[2]: an MCP server needs a "command" (stdio) or a "url" (streamable-http, sse)`,
		`:5: mcp_servers: invalid MCP server name "bad name"`,
		`:6: mcp_servers[4].url: expected an http:// or https:// URL, got "ftp://h"`,
		`:7: mcp_servers[5].config: MCP configuration missing.json:`,
		`:8: mcp_servers[6].config (bad.json: mcpServers.x): environment variable AP_SURELY_UNSET_VAR is not set and has no default`,
		`:9: mcp_servers[7]: invalid command line`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestDefaultApproval(t *testing.T) {
	for tool, want := range map[string]string{
		"Read": ApprovalAllow, "Glob": ApprovalAllow, "Grep": ApprovalAllow, "LS": ApprovalAllow, "TodoWrite": ApprovalAllow,
		"BashOutput": ApprovalAllow, "KillShell": ApprovalAllow, "task": ApprovalAllow,
		"Write": ApprovalAsk, "Edit": ApprovalAsk, "Bash": ApprovalAsk, "WebFetch": ApprovalAsk, "mcp__git__status": ApprovalAsk,
	} {
		if got := ToolApprovalFor(nil, tool); got != want {
			t.Errorf("%s: %s, want %s", tool, got, want)
		}
	}
	if got := ToolApprovalFor(map[string]string{"*": ApprovalAllow}, "Bash"); got != ApprovalAllow {
		t.Errorf(`"*": allow does not allow Bash: %s`, got)
	}
	if got := ToolApprovalFor(map[string]string{"mcp__*": ApprovalDeny}, "mcp__x__y"); got != ApprovalDeny {
		t.Errorf("mcp__*: %s", got)
	}
}
