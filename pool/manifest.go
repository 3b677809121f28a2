package pool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/team"
)

// New builds a pool from a validated manifest: FromManifest with
// opts.Registry, then Build. The pool's Manifest is m.
func New(m *config.Manifest, opts Options) (*Pool, error) {
	if opts.Registry == nil {
		opts.Registry = NewRegistry()
	}
	cfg, err := FromManifest(m, opts.Registry)
	if err != nil {
		return nil, err
	}
	return build(cfg, opts, m)
}

// FromManifest converts a validated manifest to a Config, building every
// agent's model with reg (nil: NewRegistry()), which must have its type.
// A program may add to the result (tools of one agent, custom nodes) before
// it calls Build; the workspace is resolved against the manifest's
// directory.
func FromManifest(m *config.Manifest, reg *Registry) (Config, error) {
	if reg == nil {
		reg = NewRegistry()
	}
	cfg := Config{Default: m.DefaultAgent, Limits: m.Limits, MCPServers: m.MCPServers, Skills: m.Skills}
	if m.Workspace != "" {
		cfg.Workspace = m.ResolvePath(m.Workspace)
	}
	cfg.Skills.Paths = nil
	for _, p := range m.Skills.Paths {
		cfg.Skills.Paths = append(cfg.Skills.Paths, m.ResolvePath(expandHome(p)))
	}
	var errs []error
	for _, name := range m.AgentOrder {
		a := m.Agents[name]
		if a.External != nil {
			n, policy, err := externalNode(m, reg, a, cfg.Workspace)
			if err != nil {
				where := ""
				if m.Path != "" && a.Line > 0 {
					where = fmt.Sprintf(" (%s:%d)", filepath.Base(m.Path), a.Line)
				}
				errs = append(errs, fmt.Errorf("agent %s%s: %w", name, where, err))
				continue
			}
			cfg.Nodes = append(cfg.Nodes, n)
			if len(a.Toolsets) > 0 || len(a.Workers) > 0 {
				if cfg.NodeTools == nil {
					cfg.NodeTools = map[string]NodeTools{}
				}
				nt := nodeTools(a)
				if a.External.Cwd != "" {
					nt.Dir = m.ResolvePath(expandHome(a.External.Cwd))
				}
				cfg.NodeTools[name] = nt
			}
			if policy != nil {
				if cfg.NodeToolApproval == nil {
					cfg.NodeToolApproval = map[string]map[string]string{}
				}
				cfg.NodeToolApproval[name] = policy
			}
			continue
		}
		mdl, err := reg.NewModel(a.Model)
		if err != nil {
			errs = append(errs, fmt.Errorf("agent %s: %w", name, err))
			continue
		}
		spec := AgentSpec{
			Name: name, Description: a.Description, SystemPrompt: a.SystemPrompt, Model: mdl,
			MaxTurns: a.MaxTurns, ToolApproval: a.ToolApproval, MCPServers: a.MCPServers,
			MaxResponseBytes: a.Model.MaxResponseBytes, MaxToolCallsPerTurn: a.MaxToolCallsPerTurn, Connections: a.Connections,
			ContextWindow: a.Model.ContextWindow, CompactThreshold: a.Model.CompactThreshold,
			Budget: spawn.Budget{Tokens: a.Budget.Tokens, CostUSD: a.Budget.CostUSD},
		}
		nt := nodeTools(a)
		spec.Builtin, spec.Disabled, spec.FetchAllowedHosts, spec.Workers = nt.Builtin, nt.Disabled, nt.FetchAllowedHosts, nt.Workers
		spec.Search = nt.Search
		if m.Skills.Set && !slices.Contains(spec.Builtin, config.ToolsetSkills) {
			// A manifest with `skills:` gives every agent the skills tools.
			spec.Builtin = append(spec.Builtin, config.ToolsetSkills)
		}
		if o := a.Output; o != nil {
			spec.Output = &agent.Output{Name: o.Name, Description: o.Description, Schema: o.Schema, Retries: o.Retries}
		}
		cfg.Agents = append(cfg.Agents, spec)
	}
	for _, name := range m.TeamOrder {
		t := m.Teams[name]
		spec := TeamSpec{
			Name: name, Description: t.Description, Mode: team.Mode(t.Mode), Members: t.Members,
			SharedPrompt: t.SharedPrompt, Connections: t.Connections,
		}
		if spec.Mode == team.Parallel {
			spec.RequireAll = t.RequireAll
		} else {
			spec.ContinueOnFailure = !t.RequireAll
		}
		cfg.Teams = append(cfg.Teams, spec)
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// nodeTools are the toolsets and workers of a manifest's agent.
func nodeTools(a *config.Agent) NodeTools {
	var nt NodeTools
	for _, ts := range a.Toolsets {
		nt.Builtin = append(nt.Builtin, ts.Type)
		nt.Disabled = append(nt.Disabled, ts.Disabled...)
		nt.FetchAllowedHosts = append(nt.FetchAllowedHosts, ts.AllowedHosts...)
		if ts.Search != nil {
			nt.Search = ts.Search
		}
	}
	for _, w := range a.Workers {
		nt.Workers = append(nt.Workers, WorkerSpec{Name: w.Name, PassMessageHistory: w.PassMessageHistory, KeepHistory: !w.ResetHistoryOnRun})
	}
	return nt
}

// externalNode builds the node of an external agent with reg's
// ExternalMaker, and its tool approval policy for the file operations it
// asks us for (requires_tool_confirmation: never allows them all; else
// each tool's default: Write asks).
func externalNode(m *config.Manifest, reg *Registry, a *config.Agent, workspace string) (spawn.Node, map[string]string, error) {
	mk := reg.externalMaker()
	if mk == nil {
		kind := config.AgentACP
		if a.External.A2A != nil {
			kind = config.AgentA2A
		}
		if a.External.AGUI != nil {
			kind = config.AgentAGUI
		}
		return nil, nil, fmt.Errorf("type %s is not wired into this program; %s", kind, config.WiringHint)
	}
	dir := workspace
	if a.External.Cwd != "" {
		dir = m.ResolvePath(expandHome(a.External.Cwd))
	}
	n, err := mk(a, dir)
	if err != nil {
		return nil, nil, err
	}
	if a.External.RequiresToolConfirmation == "never" {
		return n, map[string]string{"*": config.ApprovalAllow}, nil
	}
	return n, nil, nil
}

// manifest describes cfg as a manifest, for Pool.Manifest: agents with
// their model's ID (and no type), teams, the default, limits, workspace and
// MCP servers. Custom nodes are in neither Agents nor Teams.
func (cfg *Config) manifest() *config.Manifest {
	m := &config.Manifest{
		DefaultAgent: cfg.Default, Agents: map[string]*config.Agent{}, Teams: map[string]*config.Team{},
		Limits: cfg.Limits, Workspace: cfg.Workspace, MCPServers: cfg.MCPServers,
	}
	for _, a := range cfg.Agents {
		ca := &config.Agent{
			Name: a.Name, Description: a.Description, SystemPrompt: a.SystemPrompt,
			Model:    config.ModelSpec{Model: a.Model.ID(), MaxResponseBytes: a.MaxResponseBytes},
			MaxTurns: a.MaxTurns, MaxToolCallsPerTurn: a.MaxToolCallsPerTurn,
			ToolApproval: a.ToolApproval, MCPServers: a.MCPServers, Connections: a.Connections,
			Budget: config.Budget{Tokens: a.Budget.Tokens, CostUSD: a.Budget.CostUSD},
		}
		if o := a.Output; o != nil {
			ca.Output = &config.OutputSpec{Name: o.Name, Description: o.Description, Schema: o.Schema, Retries: o.Retries}
		}
		for _, typ := range a.Builtin {
			ts := config.ToolsetSpec{Type: typ}
			if typ == config.ToolsetFetch {
				ts.AllowedHosts = a.FetchAllowedHosts
			}
			if typ == config.ToolsetSearch {
				ts.Search = a.Search
			}
			ca.Toolsets = append(ca.Toolsets, ts)
		}
		for _, w := range a.Workers {
			ca.Workers = append(ca.Workers, config.WorkerSpec{Name: w.Name, PassMessageHistory: w.PassMessageHistory, ResetHistoryOnRun: !w.KeepHistory})
		}
		m.Agents[a.Name] = ca
		m.AgentOrder = append(m.AgentOrder, a.Name)
	}
	for _, t := range cfg.Teams {
		m.Teams[t.Name] = &config.Team{
			Name: t.Name, Description: t.Description, Mode: string(t.Mode), Members: t.Members,
			SharedPrompt: t.SharedPrompt, RequireAll: t.requireAll(), Connections: t.Connections,
		}
		m.TeamOrder = append(m.TeamOrder, t.Name)
	}
	return m
}

// expandHome replaces a leading "~/" with the home directory.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}
