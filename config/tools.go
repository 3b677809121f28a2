package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentpool/agentpool/internal/bounded"
)

// Toolset types (`tools:` / `toolsets:` entries).
const (
	ToolsetSubagent   = "subagent"    // task, list_available_nodes, task_status, task_output, task_stop, send_message, delegate_to, ask_agent
	ToolsetFileAccess = "file_access" // Read, Write, Edit, Glob, Grep, LS
	ToolsetExecution  = "execution"   // Bash, BashOutput, KillShell
	ToolsetPlan       = "plan"        // TodoWrite
	ToolsetFetch      = "fetch"       // WebFetch
)

// toolsetAliases maps other names for a toolset (AgentPool's, where they
// mean the same thing) to the canonical type.
var toolsetAliases = map[string]string{
	"agent_management":   ToolsetSubagent, // AgentPool: list agents, delegate_to, ask_agent (lifecycle tools not offered)
	"agent_cli":          ToolsetSubagent, // AgentPool: management commands; the read and delegation ones (warned)
	"bash":               ToolsetExecution,
	"shell":              ToolsetExecution,
	"process_management": ToolsetExecution, // AgentPool: background processes with output and kill
	"todo":               ToolsetPlan,
	"web_fetch":          ToolsetFetch,
}

// MCP server transports.
const (
	MCPStdio          = "stdio"
	MCPSSE            = "sse"
	MCPStreamableHTTP = "streamable-http"
)

// MCPServer is one entry of `mcp_servers:`, at manifest level (every agent)
// or agent level.
type MCPServer struct {
	Name    string            // unique per manifest; tools are mcp__<Name>__<tool>
	Type    string            // MCPStdio, MCPSSE or MCPStreamableHTTP
	Command string            // stdio
	Args    []string          // stdio
	Env     map[string]string // stdio, added to the inherited environment
	URL     string            // sse, streamable-http
	Headers map[string]string // sse, streamable-http
	Timeout time.Duration     // per tool call; 0: the runtime default
	Enabled bool              // false: declared but not started
	Source  string            // where it was declared: the .mcp.json path, else ""
	Line    int
}

var (
	mcpKeys  = []string{"name", "type", "command", "args", "env", "environment", "url", "headers", "enabled", "timeout"}
	mcpTypes = []string{MCPStdio, MCPSSE, MCPStreamableHTTP}
	// Compiled on first use, not at package init, which every process
	// linking the package pays (agentpool version too).
	mcpNameRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })
	mcpBadChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]+`) })
	envVarRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`) })
)

// canonicalToolset returns the toolset type a written name means.
func canonicalToolset(typ string) string {
	if c, ok := toolsetAliases[typ]; ok {
		return c
	}
	return typ
}

// mcpServers reads `mcp_servers:`: a list of command lines or mappings, or
// {config: PATH} naming a Claude Code .mcp.json (also allowed as a list
// entry).
func (p *parser) mcpServers(n *yaml.Node, path string) []MCPServer {
	d := deref(n)
	if isNull(d) {
		return nil
	}
	if d.Kind == yaml.MappingNode {
		f, ok := p.object(n, path, []string{"config"})
		if !ok {
			return nil
		}
		if ce, ok := f["config"]; ok {
			return p.mcpConfigFile(ce.val, path+".config")
		}
		p.add(n.Line, path, "expected a list of servers or {config: PATH}")
		return nil
	}
	var out []MCPServer
	for i, c := range p.list(n, path) {
		ip := index(path, i)
		cd := deref(c)
		switch {
		case cd.Kind == yaml.ScalarNode && !isNull(cd):
			line := strings.TrimSpace(cd.Value)
			args, err := splitCommandLine(line)
			if err != nil || len(args) == 0 {
				p.add(c.Line, ip, "invalid command line %q: %v", line, err)
				continue
			}
			out = append(out, MCPServer{Name: serverName(args), Type: MCPStdio, Command: args[0], Args: args[1:], Enabled: true, Line: c.Line})
		case cd.Kind == yaml.MappingNode && hasKey(cd, "config"):
			f, ok := p.object(c, ip, []string{"config"})
			if ok {
				out = append(out, p.mcpConfigFile(f["config"].val, ip+".config")...)
			}
		default:
			if s, ok := p.mcpServer(c, ip); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := deref(m.Content[i]); k != nil && k.Value == key {
			return true
		}
	}
	return false
}

func (p *parser) mcpServer(n *yaml.Node, path string) (MCPServer, bool) {
	s := MCPServer{Enabled: true, Line: n.Line}
	f, ok := p.object(n, path, mcpKeys)
	if !ok {
		return s, false
	}
	if e, ok := f["name"]; ok {
		s.Name = p.requiredStr(e.val, path+".name")
	}
	if e, ok := f["type"]; ok {
		if t, ok := p.word(e.val, path+".type"); ok {
			if t == "http" || t == "streamable_http" {
				t = MCPStreamableHTTP
			}
			if !contains(mcpTypes, t) {
				p.add(e.val.Line, path+".type", "unknown MCP server type %q%s", t, orKnown(t, mcpTypes))
				return s, false
			}
			s.Type = t
		}
	}
	if e, ok := f["command"]; ok {
		s.Command = p.requiredStr(e.val, path+".command")
	}
	if e, ok := f["args"]; ok {
		for i, c := range p.list(e.val, path+".args") {
			s.Args = append(s.Args, p.str(c, index(path+".args", i)))
		}
	}
	env, hasEnv := f["env"]
	environment, hasEnvironment := f["environment"]
	switch {
	case hasEnv && hasEnvironment:
		p.add(environment.line(), path+".environment", "use either \"env\" or \"environment\", not both")
	case hasEnv:
		s.Env = p.stringMap(env.val, path+".env")
	case hasEnvironment:
		s.Env = p.stringMap(environment.val, path+".environment")
	}
	if e, ok := f["url"]; ok {
		s.URL = p.requiredStr(e.val, path+".url")
	}
	if e, ok := f["headers"]; ok {
		s.Headers = p.stringMap(e.val, path+".headers")
	}
	if e, ok := f["enabled"]; ok {
		s.Enabled = p.boolean(e.val, path+".enabled", true)
	}
	if e, ok := f["timeout"]; ok {
		s.Timeout = p.seconds(e.val, path+".timeout")
	}
	if s.Type == "" {
		switch {
		case s.Command != "":
			s.Type = MCPStdio
		case s.URL != "":
			s.Type = MCPStreamableHTTP
		}
	}
	switch s.Type {
	case "":
		p.add(n.Line, path, "an MCP server needs a \"command\" (stdio) or a \"url\" (streamable-http, sse)")
		return s, false
	case MCPStdio:
		if s.Command == "" {
			p.add(n.Line, path, "a stdio MCP server needs a \"command\"")
			return s, false
		}
		if s.URL != "" || len(s.Headers) > 0 {
			p.add(n.Line, path, "\"url\" and \"headers\" apply to sse and streamable-http servers, not stdio")
		}
	default:
		if s.URL == "" {
			p.add(n.Line, path, "a %s MCP server needs a \"url\"", s.Type)
			return s, false
		}
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			p.add(f["url"].val.Line, path+".url", "expected an http:// or https:// URL, got %q", s.URL)
		}
		if s.Command != "" {
			p.add(n.Line, path, "\"command\" applies to stdio servers, not %s", s.Type)
		}
	}
	if s.Name == "" {
		if s.Command != "" {
			s.Name = serverName(append([]string{s.Command}, s.Args...))
		} else {
			s.Name = serverName([]string{s.URL})
		}
	}
	return s, true
}

// seconds reads a timeout: a number of seconds (AgentPool's form) or a Go
// duration string.
func (p *parser) seconds(n *yaml.Node, path string) time.Duration {
	d := deref(n)
	if d != nil && d.Kind == yaml.ScalarNode && (d.ShortTag() == "!!int" || d.ShortTag() == "!!float") {
		v, err := strconv.ParseFloat(d.Value, 64)
		if err != nil || v < 0 {
			p.add(n.Line, path, "expected a non-negative number of seconds, got %s", d.Value)
			return 0
		}
		return time.Duration(v * float64(time.Second))
	}
	return p.duration(n, path)
}

// stringMap reads a mapping of strings to strings.
func (p *parser) stringMap(n *yaml.Node, path string) map[string]string {
	d := deref(n)
	if isNull(d) {
		return nil
	}
	if d.Kind != yaml.MappingNode {
		p.add(n.Line, path, "expected a mapping of names to strings, got %s", describe(d))
		return nil
	}
	out := map[string]string{}
	for _, e := range p.entries(d, path) {
		out[e.key] = p.str(e.val, join(path, e.key))
	}
	return out
}

// mcpConfigFile reads a Claude Code .mcp.json ({"mcpServers": {NAME:
// {command, args, env, type, url, headers}}}), expanding ${VAR} and
// ${VAR:-default} in its strings. The path is relative to the manifest.
func (p *parser) mcpConfigFile(n *yaml.Node, path string) []MCPServer {
	rel, ok := p.word(n, path)
	if !ok {
		return nil
	}
	file := rel
	if !filepath.IsAbs(file) {
		file = filepath.Join(filepath.Dir(p.file), file)
	}
	data, err := p.budget.ReadFile(file)
	if err != nil {
		p.add(n.Line, path, "MCP configuration %s: %v", rel, p.readProblem(err))
		return nil
	}
	if err := p.budget.CheckJSON(data); err != nil {
		p.add(n.Line, path, "MCP configuration %s:%d: %v", rel, err.(*bounded.Error).Line, err)
		return nil
	}
	var doc struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		p.add(n.Line, path, "MCP configuration %s: invalid JSON: %v", rel, err)
		return nil
	}
	if doc.MCPServers == nil {
		p.add(n.Line, path, "MCP configuration %s: no \"mcpServers\" object", rel)
		return nil
	}
	names := make([]string, 0, len(doc.MCPServers))
	for name := range doc.MCPServers {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []MCPServer
	for _, name := range names {
		c := doc.MCPServers[name]
		var missing []string
		expand := func(s string) string {
			return envVarRE().ReplaceAllStringFunc(s, func(m string) string {
				sub := envVarRE().FindStringSubmatch(m)
				if v, ok := os.LookupEnv(sub[1]); ok {
					return v
				}
				if sub[2] != "" {
					return sub[3]
				}
				missing = append(missing, sub[1])
				return ""
			})
		}
		s := MCPServer{Name: name, Command: expand(c.Command), URL: expand(c.URL), Enabled: true, Source: file, Line: n.Line}
		for _, a := range c.Args {
			s.Args = append(s.Args, expand(a))
		}
		if len(c.Env) > 0 {
			s.Env = map[string]string{}
			for k, v := range c.Env {
				s.Env[k] = expand(v)
			}
		}
		if len(c.Headers) > 0 {
			s.Headers = map[string]string{}
			for k, v := range c.Headers {
				s.Headers[k] = expand(v)
			}
		}
		sp := fmt.Sprintf("%s (%s: mcpServers.%s)", path, rel, name)
		if len(missing) > 0 {
			slices.Sort(missing)
			p.add(n.Line, sp, "environment variable %s is not set and has no default (${VAR:-default})", strings.Join(slices.Compact(missing), ", "))
			continue
		}
		switch c.Type {
		case "", MCPStdio:
			s.Type = MCPStdio
			if s.Command == "" {
				if s.URL != "" && c.Type == "" {
					s.Type = MCPStreamableHTTP
					break
				}
				p.add(n.Line, sp, "a stdio MCP server needs a \"command\"")
				continue
			}
		case "http", MCPStreamableHTTP:
			s.Type = MCPStreamableHTTP
		case MCPSSE:
			s.Type = MCPSSE
		default:
			p.add(n.Line, sp, "unknown MCP server type %q (known: stdio, http, sse)", c.Type)
			continue
		}
		if s.Type != MCPStdio && s.URL == "" {
			p.add(n.Line, sp, "a %s MCP server needs a \"url\"", s.Type)
			continue
		}
		out = append(out, s)
	}
	return out
}

// serverName derives a server name from a command line: the last argument
// that is not an option, its base name without an npm scope, version or
// extension ("npx -y @modelcontextprotocol/server-everything" gives
// "server-everything").
func serverName(args []string) string {
	cand := ""
	for _, a := range args {
		if a != "" && !strings.HasPrefix(a, "-") {
			cand = a
		}
	}
	cand = strings.TrimSuffix(cand, "/")
	if i := strings.LastIndexAny(cand, `/\`); i >= 0 {
		cand = cand[i+1:]
	}
	if i := strings.LastIndex(cand, "@"); i > 0 {
		cand = cand[:i]
	}
	for _, ext := range []string{".js", ".mjs", ".py", ".ts"} {
		cand = strings.TrimSuffix(cand, ext)
	}
	cand = strings.Trim(mcpBadChars().ReplaceAllString(cand, "_"), "_")
	if cand == "" {
		cand = "mcp"
	}
	return cand
}

// splitCommandLine splits a command line as a POSIX shell would for plain
// words, single and double quotes and backslash escapes (no expansion).
func splitCommandLine(s string) ([]string, error) {
	var (
		out   []string
		cur   strings.Builder
		inTok bool
		quote rune
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				if i+1 < len(rs) && strings.ContainsRune(`"\$`+"`", rs[i+1]) {
					i++
				}
				cur.WriteRune(rs[i])
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inTok = r, true
		case r == '\\':
			if i+1 < len(rs) {
				i++
				cur.WriteRune(rs[i])
				inTok = true
			}
		case r == ' ' || r == '\t' || r == '\n':
			if inTok {
				out = append(out, cur.String())
				cur.Reset()
				inTok = false
			}
		default:
			cur.WriteRune(r)
			inTok = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inTok {
		out = append(out, cur.String())
	}
	return out, nil
}

// checkMCPNames makes server names unique across the manifest: a derived
// name that repeats gets a numeric suffix; two explicit names clash.
func (p *parser) checkMCPNames(m *Manifest) {
	seen := map[string]int{}
	fix := func(list []MCPServer, path string) {
		for i := range list {
			s := &list[i]
			if !mcpNameRE().MatchString(s.Name) {
				p.add(s.Line, path, "invalid MCP server name %q: use letters, digits, \"_\" and \"-\"", s.Name)
				continue
			}
			base := s.Name
			for k := 2; ; k++ {
				if _, dup := seen[s.Name]; !dup {
					break
				}
				s.Name = fmt.Sprintf("%s-%d", base, k)
			}
			seen[s.Name] = s.Line
		}
	}
	fix(m.MCPServers, "mcp_servers")
	for _, an := range m.AgentOrder {
		fix(m.Agents[an].MCPServers, "agents."+an+".mcp_servers")
	}
}

// DefaultApproval is the decision for a tool that no `tool_approval` entry
// names: tools that change files, run commands, reach the network or call
// an MCP server ask first; reading and searching the workspace, todos and
// delegation are allowed.
func DefaultApproval(tool string) string {
	switch tool {
	case "Write", "Edit", "Bash", "WebFetch":
		return ApprovalAsk
	}
	if strings.HasPrefix(tool, "mcp__") {
		return ApprovalAsk
	}
	return ApprovalAllow
}
