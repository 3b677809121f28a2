package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sync"

	"github.com/agentpool/agentpool/tool/mcp"
)

// The MCP servers an editor names in session/new and session/load
// (mcpServers) are this session's: one mcp.Manager per ACP session, whose
// toolsets every run of the session (children included) offers besides
// the agents' own tools, as mcp__<name>__<tool>. A server starts when a
// run first needs its tools; the manager is closed (every server process
// stopped) when the session is closed (session/close), loaded again with
// other servers, or when the connection ends.

// mcpServerEntry is one entry of mcpServers: stdio {name, command, args,
// env: [{name, value}]}, or {type: "http" | "sse", name, url, headers:
// [{name, value}]}.
type mcpServerEntry struct {
	Type    string        `json:"type"`
	Name    *string       `json:"name"`
	Command string        `json:"command"`
	Args    []string      `json:"args"`
	Env     []envVariable `json:"env"`
	URL     string        `json:"url"`
	Headers []envVariable `json:"headers"`
}

// Compiled on first use, not at package init, which every process
// linking the package pays (agentpool version too).
var unsafeNameChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]`) })

// mcpName makes an ACP server name (free text) a valid agentpool server
// name: characters outside [A-Za-z0-9_-] become '_' ("my server" ->
// "my_server"), so the tools are mcp__my_server__<tool>.
func mcpName(name string) string { return unsafeNameChars().ReplaceAllString(name, "_") }

// parseMCPServers checks mcpServers and turns them into server
// configurations whose stdio processes run in dir. An invalid entry is an
// invalid-params error that names it.
func parseMCPServers(raw []json.RawMessage, dir string) ([]mcp.ServerConfig, *rpcError) {
	var out []mcp.ServerConfig
	seen := map[string]int{}
	for i, r := range raw {
		bad := func(name, format string, args ...any) *rpcError {
			label := fmt.Sprintf("mcpServers[%d]", i)
			if name != "" {
				label += fmt.Sprintf(" (%q)", name)
			}
			return invalidParams("%s: %s", label, fmt.Sprintf(format, args...))
		}
		r = bytes.TrimSpace(r)
		if len(r) == 0 || r[0] != '{' {
			return nil, bad("", "an MCP server must be an object")
		}
		var e mcpServerEntry
		if err := json.Unmarshal(r, &e); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return nil, bad("", "%s: expected %s, got %s", te.Field, te.Type, te.Value)
			}
			return nil, bad("", "%v", err)
		}
		if e.Name == nil || *e.Name == "" {
			return nil, bad("", "name is required")
		}
		name := *e.Name
		cfg := mcp.ServerConfig{Name: mcpName(name)}
		if j, dup := seen[cfg.Name]; dup {
			return nil, bad(name, "duplicate name: mcpServers[%d] has the same tool prefix mcp__%s__", j, cfg.Name)
		}
		seen[cfg.Name] = i
		switch e.Type {
		case "", "stdio":
			if e.Command == "" {
				return nil, bad(name, "command is required for a stdio server")
			}
			cfg.Transport, cfg.Command, cfg.Args, cfg.Dir = mcp.TransportStdio, e.Command, e.Args, dir
			env, err := pairs(e.Env)
			if err != "" {
				return nil, bad(name, "env: %s", err)
			}
			cfg.Env = env
		case "http", "sse":
			u, perr := url.Parse(e.URL)
			if e.URL == "" || perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, bad(name, "url must be an http or https URL, got %q", e.URL)
			}
			cfg.Transport, cfg.URL = mcp.TransportStreamableHTTP, e.URL
			if e.Type == "sse" {
				cfg.Transport = mcp.TransportSSE
			}
			headers, err := pairs(e.Headers)
			if err != "" {
				return nil, bad(name, "headers: %s", err)
			}
			cfg.Headers = headers
		default:
			return nil, bad(name, "unknown type %q (want stdio, http or sse)", e.Type)
		}
		out = append(out, cfg)
	}
	return out, nil
}

// pairs turns [{name, value}] into a map; "" or the problem.
func pairs(list []envVariable) (map[string]string, string) {
	if len(list) == 0 {
		return nil, ""
	}
	m := make(map[string]string, len(list))
	for i, p := range list {
		if p.Name == "" {
			return nil, fmt.Sprintf("entry %d has no name", i)
		}
		m[p.Name] = p.Value
	}
	return m, ""
}

// newSessionMCP builds the manager of a session's MCP servers (nil when
// there are none). No server starts here.
func (c *conn) newSessionMCP(raw []json.RawMessage, dir string) (*mcp.Manager, *rpcError) {
	cfgs, rerr := parseMCPServers(raw, dir)
	if rerr != nil || len(cfgs) == 0 {
		return nil, rerr
	}
	mgr, err := mcp.NewManager(cfgs, mcp.Options{Logger: c.log, ClientName: c.s.opts.Name, ClientVersion: c.s.opts.Version})
	if err != nil {
		return nil, invalidParams("mcpServers: %v", err)
	}
	return mgr, nil
}

// closeMCP stops a session's MCP servers in the background; Serve waits
// for it before it returns.
func (c *conn) closeMCP(mgr *mcp.Manager) {
	if mgr != nil {
		c.bg.Go(func() { mgr.Close() })
	}
}

// closeAllMCP stops the MCP servers of every session of the connection and
// waits (the end of Serve: no server process outlives it).
func (c *conn) closeAllMCP() {
	c.mu.Lock()
	var mgrs []*mcp.Manager
	for _, s := range c.sessions {
		s.mu.Lock()
		if s.mcp != nil {
			mgrs = append(mgrs, s.mcp)
			s.mcp = nil
		}
		s.mu.Unlock()
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range mgrs {
		wg.Go(func() { m.Close() })
	}
	wg.Wait()
}
