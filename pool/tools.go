package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/checkpoint"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/code"
	"github.com/agentpool/agentpool/tool/files"
	"github.com/agentpool/agentpool/tool/shell"
	"github.com/agentpool/agentpool/tool/skills"
	"github.com/agentpool/agentpool/tool/todo"
	"github.com/agentpool/agentpool/tool/workspace"
)

// builtins are the pool's builtin toolsets, made when the first agent
// lists them and shared by every agent (their per-session state is keyed by
// session id).
type builtins struct {
	ws   *workspace.Workspace
	here *dirToolsets // the file and shell toolsets of ws
	todo *todo.Toolset
	// fetch holds one WebFetch per allow-list (agents' allowed_hosts),
	// keyed by fetchKey.
	fetch map[string]tool.Tool
	// makeFetch makes them (nil: the fetch toolset is not wired in).
	makeFetch FetchMaker
	// makeSearch makes the search tools (nil: not wired in).
	makeSearch SearchMaker
	mcp        MCPServers
	// skillsCfg says where skills are; skills is its toolset, made on
	// first use.
	skillsCfg  config.Skills
	skillsOnce sync.Once
	skills     *skills.Toolset
	log        *slog.Logger
	// shellEnv names a session's environment file for Bash (nil: none),
	// from Options.Hooks (hook.Registry.ShellEnvFile).
	shellEnv func(context.Context) string
	// elsewhere are the file and shell toolsets of directories other
	// than the workspace (an external member's cwd: NodeTools.Dir), by
	// the directory's root.
	elsewhere map[string]*dirToolsets
	// watch captures the changes of Bash and MCP tools
	// (docs/checkpoints.md).
	watch checkpoint.Watcher

	closeOnce sync.Once
	closeErr  error
}

// newBuiltins opens the workspace dir (the current directory when empty)
// and makes, with reg, the MCP servers of every enabled server listed
// (servers themselves start when a run first needs them).
func newBuiltins(dir string, reg *Registry, lists ...[]config.MCPServer) (*builtins, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		dir = wd
	}
	b := &builtins{makeFetch: reg.fetchMaker(), makeSearch: reg.searchMaker()}
	var err error
	if b.ws, err = workspace.New(dir); err != nil {
		return nil, err
	}
	var servers []config.MCPServer
	for _, list := range lists {
		for _, s := range list {
			if s.Enabled {
				servers = append(servers, s)
			}
		}
	}
	if len(servers) == 0 {
		return b, nil
	}
	makeMCP := reg.mcpMaker()
	if makeMCP == nil {
		return nil, fmt.Errorf("MCP server %q: MCP is not wired into this program (pool.Registry.SetMCP; batteries.Registry() wires it)", servers[0].Name)
	}
	mcps, err := makeMCP(servers, b.ws.Root())
	if err != nil {
		return nil, err
	}
	if mcps == nil {
		return nil, errors.New("the Registry's MCPMaker returned no servers")
	}
	b.mcp = mcps
	return b, nil
}

// builtinToolsets are the toolset types tools knows.
var builtinToolsets = []string{config.ToolsetSubagent, config.ToolsetFileAccess, config.ToolsetExecution, config.ToolsetPlan, config.ToolsetFetch, config.ToolsetSkills, config.ToolsetCode, config.ToolsetSearch}

// dirToolsets are the file and shell toolsets acting in one directory,
// each made on first use.
type dirToolsets struct {
	ws    *workspace.Workspace
	files *files.Toolset
	shell *shell.Toolset
	code  *code.Toolset
}

// in returns the toolsets of dir: the workspace's when dir is empty or is
// the workspace.
func (b *builtins) in(dir string) (*dirToolsets, error) {
	if b.here == nil {
		b.here = &dirToolsets{ws: b.ws}
	}
	if dir == "" {
		return b.here, nil
	}
	ws, err := workspace.New(dir)
	if err != nil {
		return nil, err
	}
	if ws.Root() == b.ws.Root() {
		return b.here, nil
	}
	if d, ok := b.elsewhere[ws.Root()]; ok {
		return d, nil
	}
	if b.elsewhere == nil {
		b.elsewhere = map[string]*dirToolsets{}
	}
	d := &dirToolsets{ws: ws}
	b.elsewhere[ws.Root()] = d
	return d, nil
}

// tools returns the builtin tools of one toolset type for agent a, whose
// file and shell tools act in dir ("": the workspace).
func (b *builtins) tools(a AgentSpec, typ, dir string) ([]tool.Tool, error) {
	switch typ {
	case config.ToolsetSubagent:
		return spawn.SubagentTools(), nil
	case config.ToolsetFileAccess:
		d, err := b.in(dir)
		if err != nil {
			return nil, err
		}
		if d.files == nil {
			d.files = files.New(d.ws)
			d.files.SetCheckpointer(b.watch.Checkpointer())
		}
		return d.files.Tools(), nil
	case config.ToolsetExecution:
		d, err := b.in(dir)
		if err != nil {
			return nil, err
		}
		if d.shell == nil {
			d.shell = shell.New(d.ws)
			if b.shellEnv != nil {
				d.shell.SourceEnvFile(b.shellEnv)
			}
		}
		return b.watch.WrapAll(d.shell.Tools(), d.ws), nil
	case config.ToolsetCode:
		d, err := b.in(dir)
		if err != nil {
			return nil, err
		}
		if d.code == nil {
			d.code = code.New(d.ws)
		}
		// format_code rewrites files through its formatter's process:
		// watched like Bash, so a rewind restores what it changed.
		return b.watch.WrapAll(d.code.Tools(), d.ws), nil
	case config.ToolsetPlan:
		if b.todo == nil {
			b.todo = todo.New()
		}
		return b.todo.Tools(), nil
	case config.ToolsetFetch:
		f, err := b.fetchTool(a.FetchAllowedHosts)
		if err != nil {
			return nil, err
		}
		return []tool.Tool{f}, nil
	case config.ToolsetSkills:
		return b.skillsToolset().Tools(), nil
	case config.ToolsetSearch:
		if a.Search == nil || a.Search.Web == nil && a.Search.News == nil {
			return nil, nil // no provider named: no tools, as in AgentPool
		}
		if b.makeSearch == nil {
			return nil, fmt.Errorf("the %s toolset is not wired into this program (pool.Registry.SetSearch; batteries.Registry() wires it)", config.ToolsetSearch)
		}
		return b.makeSearch(*a.Search)
	}
	return nil, fmt.Errorf("unknown toolset type %q", typ)
}

// fetchTool returns the WebFetch that may reach the allowed hosts besides
// public addresses, shared by the agents that allow the same ones.
func (b *builtins) fetchTool(allowed []string) (tool.Tool, error) {
	key := fetchKey(allowed)
	if f, ok := b.fetch[key]; ok {
		return f, nil
	}
	if b.makeFetch == nil {
		return nil, fmt.Errorf("the %s toolset is not wired into this program (pool.Registry.SetFetch; batteries.Registry() wires it)", config.ToolsetFetch)
	}
	f, err := b.makeFetch(slices.Clone(allowed))
	if err != nil {
		return nil, fmt.Errorf("allowed_hosts: %w", err)
	}
	if f == nil {
		return nil, errors.New("the Registry's FetchMaker returned no tool")
	}
	if b.fetch == nil {
		b.fetch = map[string]tool.Tool{}
	}
	b.fetch[key] = f
	return f, nil
}

// fetchKey identifies an allow-list whatever the order and repetitions of
// its entries.
func fetchKey(allowed []string) string {
	s := slices.Clone(allowed)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), "\n")
}

// mcpToolsets returns the toolsets of the enabled MCP servers listed (the
// pool's and an agent's own).
func (b *builtins) mcpToolsets(lists ...[]config.MCPServer) []tool.Toolset {
	if b.mcp == nil {
		return nil
	}
	var out []tool.Toolset
	for _, list := range lists {
		for _, s := range list {
			if ts, ok := b.mcp.Toolset(s.Name); ok && s.Enabled {
				out = append(out, watchedToolset{ts, b})
			}
		}
	}
	return out
}

// close stops background shells and MCP servers; safe to call twice.
func (b *builtins) close() error {
	b.closeOnce.Do(func() {
		var errs []error
		for _, d := range append([]*dirToolsets{b.here}, slices.Collect(maps.Values(b.elsewhere))...) {
			if d != nil && d.shell != nil {
				errs = append(errs, d.shell.Close())
			}
		}
		if b.mcp != nil {
			errs = append(errs, b.mcp.Close())
		}
		b.watch.Close() // its shells are gone
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}

// watchedToolset is an MCP server's toolset whose tools that are not
// read-only have their changes to the workspace captured.
type watchedToolset struct {
	tool.Toolset
	b *builtins
}

func (w watchedToolset) Tools(ctx context.Context) ([]tool.Tool, error) {
	ts, err := w.Toolset.Tools(ctx)
	if err != nil {
		return nil, err
	}
	return w.b.watch.WrapAll(ts, w.b.ws), nil
}
