package pool

import (
	"fmt"
	"maps"
	"slices"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// ToolNode is a node of Config.Nodes that runs tools for a program of its
// own (an external agent: package external/acpagent serves them to its
// program over MCP, in the session of each delegation). Build gives the
// tools of the node's Config.NodeTools entry to WithTools and uses the
// node it returns in its place.
type ToolNode interface {
	spawn.Node
	// WithTools returns the node with tools and the tools of toolsets
	// (asked when each of its runs starts, as an agent's are).
	WithTools(tools []tool.Tool, toolsets []tool.Toolset) spawn.Node
}

// NodeTools are the tools of a ToolNode, made as an agent's: what an
// AgentSpec with the same fields would get, Options.ExtraTools and the
// pool's MCP servers (Config.MCPServers) included.
type NodeTools struct {
	Tools    []tool.Tool
	Toolsets []tool.Toolset
	// Builtin, Disabled and FetchAllowedHosts are AgentSpec's.
	Builtin           []string
	Disabled          []string
	FetchAllowedHosts []string
	Search            *config.SearchSpec
	// Workers become the tools ask_<name>.
	Workers []WorkerSpec
	// Dir is the directory the node's file and shell tools act in (an
	// external agent's own: paths it names are relative to it); empty:
	// the pool's workspace.
	Dir string
}

// spec is nt as the AgentSpec of node name, for the checks and the
// builtin tools agents have.
func (nt NodeTools) spec(name string) AgentSpec {
	return AgentSpec{Name: name, Tools: nt.Tools, Toolsets: nt.Toolsets, Builtin: nt.Builtin, Disabled: nt.Disabled,
		FetchAllowedHosts: nt.FetchAllowedHosts, Search: nt.Search, Workers: nt.Workers}
}

// validateNodeTools reports the problems of cfg.NodeTools: each entry
// names a ToolNode of Nodes, and its toolsets and workers are checked as
// an agent's are (checkTools).
func (cfg *Config) validateNodeTools(kinds map[string]string, unknown func(string) string) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(cfg.NodeTools)) {
		i := slices.IndexFunc(cfg.Nodes, func(n spawn.Node) bool { return n != nil && n.Name() == name })
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("Config.NodeTools[%q]: no node of Config.Nodes has that name", name))
			continue
		case !isToolNode(cfg.Nodes[i]):
			errs = append(errs, entryErr("node", name, "", "has NodeTools, but it runs no tools (it is not a pool.ToolNode)"))
			continue
		}
		errs = append(errs, checkTools("node", cfg.NodeTools[name].spec(name), kinds, unknown)...)
	}
	return errs
}

func isToolNode(n spawn.Node) bool { _, ok := n.(ToolNode); return ok }

// withTools gives the ToolNodes of cfg.Nodes that have NodeTools their
// tools; other nodes are returned as they are.
func (p *Pool) withTools(cfg Config, opts Options, n spawn.Node, descriptions map[string]string) (spawn.Node, error) {
	nt, ok := cfg.NodeTools[n.Name()]
	tn, isTN := n.(ToolNode)
	if !ok || !isTN {
		return n, nil
	}
	spec := nt.spec(n.Name())
	tools, err := p.agentTools(spec, nt.Dir, opts, descriptions)
	if err != nil {
		return nil, err
	}
	toolsets := append(slices.Clone(nt.Toolsets), p.builtins.mcpToolsets(cfg.MCPServers)...)
	return tn.WithTools(p.obs.Tools(tools), p.obs.Toolsets(toolsets)), nil
}

// agentTools are the tools of an agent (or ToolNode) a: its own, its
// builtin toolsets' (file and shell tools acting in dir, "": the
// workspace), its workers' and Options.ExtraTools.
func (p *Pool) agentTools(a AgentSpec, dir string, opts Options, descriptions map[string]string) ([]tool.Tool, error) {
	tools := slices.Clone(a.Tools)
	builtin, err := p.builtinTools(a, dir)
	if err != nil {
		return nil, err
	}
	tools = append(tools, builtin...)
	for _, w := range a.Workers {
		tools = append(tools, spawn.WorkerTool(w.Name, descriptions[w.Name], spawn.WorkerOptions{
			PassMessageHistory: w.PassMessageHistory, ResetHistoryOnRun: !w.KeepHistory, History: agent.HistoryFrom,
		}))
	}
	return append(tools, opts.ExtraTools...), nil
}
