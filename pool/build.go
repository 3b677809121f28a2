package pool

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/internal/proctree"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/team"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tracing"
)

// Config is a pool made of Go values: what a manifest declares, with
// models, tools and nodes that are Go values rather than names. Build
// checks it the way config.Parse checks a manifest; FromManifest makes one
// from a manifest. Agents, teams and nodes share one namespace.
type Config struct {
	Agents []AgentSpec
	Teams  []TeamSpec
	// Nodes are custom runnable nodes (anything that implements spawn.Node,
	// such as a deterministic step or a remote agent): they can be run,
	// named as workers and team members, and delegated to with the
	// subagent tools, like agents and teams.
	Nodes []spawn.Node
	// Default is the node a run without a name starts; empty: the first
	// agent (else the first team, else the first node).
	Default string
	// Limits bound delegation; zero fields take the defaults
	// (config.DefaultMaxDepth, ...).
	Limits config.Limits
	// Workspace is the directory the builtin file and shell tools act in
	// (Options.Workspace overrides it); empty: the current directory.
	Workspace string
	// MCPServers are offered to every agent (the builtin MCP manager
	// starts each on first use). Only servers with Enabled set are used.
	MCPServers []config.MCPServer
	// NodeToolApproval are tool approval policies of Nodes (node name ->
	// tool_approval), for the tools a node runs through the hooks (an
	// external agent's file operations and served tools); Options.Hooks
	// enforces them.
	NodeToolApproval map[string]map[string]string
	// NodeTools are the tools of nodes of Nodes that run tools for a
	// program of their own (ToolNode: an external agent), by node name.
	// A ToolNode without an entry gets none.
	NodeTools map[string]NodeTools
	// Skills says where the skills toolset finds skills (relative paths:
	// to the current directory); the zero value is config.DefaultSkills.
	Skills config.Skills
}

// AgentSpec is one agent of a Config.
type AgentSpec struct {
	Name         string
	Description  string
	SystemPrompt string
	Model        model.Model // required
	// Tools are offered to this agent only (Options.ExtraTools go to
	// every agent).
	Tools []tool.Tool
	// Toolsets are asked for their tools when a run starts (tool.Toolset).
	Toolsets []tool.Toolset
	// Workers become the tools ask_<name>: each names an agent, team or
	// node of the Config.
	Workers []WorkerSpec
	// Builtin lists builtin toolset types: config.ToolsetSubagent,
	// ToolsetFileAccess, ToolsetExecution, ToolsetPlan, ToolsetFetch.
	Builtin []string
	// MCPServers are the agent's own MCP servers, besides Config.MCPServers.
	MCPServers []config.MCPServer
	// MaxTurns bounds the model requests of a run; 0: Limits.MaxTurns.
	MaxTurns int
	// MaxResponseBytes bounds one model response (text, thinking and tool
	// call arguments); 0: agent.DefaultMaxResponseBytes.
	MaxResponseBytes int
	// MaxToolCallsPerTurn bounds the tool calls of one model response
	// that run (later ones get an error result); 0:
	// agent.DefaultMaxToolCallsPerTurn.
	MaxToolCallsPerTurn int
	// ContextWindow is the model's context window in tokens; 0: the
	// model's own (model.ContextWindowOf), none: no compaction.
	ContextWindow int
	// CompactThreshold is the share of the window a request may fill
	// before older turns are summarised; 0: agent.DefaultCompactThreshold.
	CompactThreshold float64
	// Budget caps what each session of the agent spends with its subtree
	// (docs/control.md, Budgets); zero: no cap of its own.
	Budget spawn.Budget
	// ToolApproval is the manifest's `tool_approval` (tool name, path.Match
	// pattern or "*" -> config.ApprovalAllow, ApprovalAsk or ApprovalDeny).
	// Options.Hooks enforces it (without Options.Hooks nothing does: Build
	// logs a warning).
	ToolApproval map[string]string
	// Disabled names tools of the Builtin toolsets that the agent does not
	// get (a toolset's `tools: {NAME: false}`); each must exist.
	Disabled []string
	// FetchAllowedHosts are the host names, IP addresses and CIDR networks
	// that the agent's WebFetch may reach although they are not public
	// (the fetch toolset's `allowed_hosts:`; hostallow.Check).
	// They need config.ToolsetFetch in Builtin.
	FetchAllowedHosts []string
	// Search names the providers of the agent's search toolset
	// (config.ToolsetSearch in Builtin); nil: no provider, no tools.
	Search *config.SearchSpec
	// Output makes the agent's final answer a structured one.
	Output *agent.Output
	// Connections forward the agent's final output to other nodes.
	Connections []config.Connection
}

// WorkerSpec is one worker of an agent. Its zero value has the manifest's
// defaults.
type WorkerSpec struct {
	Name string
	// PassMessageHistory gives the worker the caller's conversation so far.
	PassMessageHistory bool
	// KeepHistory keeps the worker's conversation across calls within the
	// caller's session (the manifest's reset_history_on_run: false); by
	// default every call starts afresh.
	KeepHistory bool
}

// TeamSpec is one team of a Config. Its zero value has the manifest's
// defaults, but Mode and Members are required.
type TeamSpec struct {
	Name         string
	Description  string
	Mode         team.Mode // team.Parallel or team.Sequential
	Members      []string  // agents, teams or nodes of the Config, in order
	SharedPrompt string    // prepended to every member's prompt
	// ContinueOnFailure makes a sequential team run its remaining members
	// after one failed (the manifest's require_all: false); by default the
	// chain stops. Sequential teams only.
	ContinueOnFailure bool
	// RequireAll makes a parallel team fail when any member failed (the
	// manifest's require_all: true); by default it fails only when every
	// member failed, and its output names the members that did. Every
	// member runs to its end either way. Parallel teams only.
	RequireAll bool
	// Connections forward the team's final output to other nodes.
	Connections []config.Connection
}

// requireAll says whether every member of the team must succeed (the
// manifest's require_all): a sequential team unless ContinueOnFailure, a
// parallel one when RequireAll.
func (t *TeamSpec) requireAll() bool {
	if t.Mode == team.Parallel {
		return t.RequireAll
	}
	return !t.ContinueOnFailure
}

// Build builds a pool from Go values. Every problem of cfg is reported
// (errors.Join), each naming the agent, team or node and the field; a
// worker or team member that names nothing defined is an error here, not
// at run time.
func Build(cfg Config, opts Options) (*Pool, error) {
	return build(cfg, opts, nil)
}

// build builds the pool of cfg; m is the manifest the pool reports (nil:
// one made from cfg).
func build(cfg Config, opts Options, m *config.Manifest) (*Pool, error) {
	cfg.Limits = limitsWithDefaults(cfg.Limits)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := opts.Budget.Check(); err != nil {
		return nil, fmt.Errorf("pool options: %w", err)
	}
	if m == nil {
		m = cfg.manifest()
	}
	if opts.Store == nil {
		opts.Store = memory.New()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Processor == nil {
		opts.Processor = record.New(opts.Store, opts.Logger)
	}
	dir := opts.Workspace
	if dir == "" {
		dir = cfg.Workspace
	}
	lists := [][]config.MCPServer{cfg.MCPServers}
	for _, a := range cfg.Agents {
		lists = append(lists, a.MCPServers)
	}
	if opts.Registry == nil {
		opts.Registry = NewRegistry()
	}
	b, err := newBuiltins(dir, opts.Registry, lists...)
	if err != nil {
		return nil, err
	}
	b.skillsCfg, b.log = cfg.Skills, opts.Logger
	if opts.Hooks != nil {
		// Claude Code's CLAUDE_ENV_FILE: Bash sources it before each command.
		b.shellEnv = opts.Hooks.ShellEnvFile
	}
	for _, w := range m.Warnings {
		opts.Logger.Warn("manifest: " + w.String())
	}
	p := &Pool{manifest: m, store: opts.Store, proc: opts.Processor, nodes: map[string]spawn.Node{}, models: map[string]spawn.ModelChoice{}, log: opts.Logger, builtins: b, engine: opts.Engine,
		commands: uniqueCommands(opts.Commands), budget: opts.Budget}
	if p.obs, err = tracing.New(opts.TracerProvider, opts.MeterProvider, tracing.Options{}); err != nil {
		b.close()
		return nil, err
	}
	if p.obs != nil {
		p.traced = map[string]spawn.Node{}
	}
	if err := p.makeNodes(cfg, opts); err != nil {
		b.close()
		return nil, err
	}
	p.defaultNode = cfg.Default
	if p.defaultNode == "" && len(p.order) > 0 {
		p.defaultNode = p.order[0]
	}
	setApprovals(cfg, opts)
	if opts.Subreaper {
		release, err := proctree.BecomeSubreaper(proctree.ReapTrees)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			opts.Logger.Debug("pool: Options.Subreaper: not on this system; processes that leave their process group escape")
		case err != nil:
			b.close()
			return nil, err
		default:
			p.unreap = release
		}
	}
	return p, nil
}

// makeNodes makes the runtime and the nodes of a validated cfg: agents,
// then teams, then custom nodes.
func (p *Pool) makeNodes(cfg Config, opts Options) error {
	p.hooks = opts.Hooks
	// Interfaces are nil, not a nil *hook.Registry, without hooks.
	var lifecycle spawn.Lifecycle
	var agentHooks agent.Hooks
	if opts.Hooks != nil {
		lifecycle, agentHooks = opts.Hooks, opts.Hooks
	}
	p.rt = spawn.NewRuntime(spawn.Config{
		Store: opts.Store,
		Limits: spawn.Limits{
			MaxDepth: cfg.Limits.MaxDepth, MaxChildren: cfg.Limits.MaxChildren,
			MaxSpawns: cfg.Limits.MaxSpawns, Timeout: cfg.Limits.SpawnTimeout,
		},
		Lifecycle: lifecycle,
		Logger:    opts.Logger,
		Lookup:    p.lookup,
		Names:     func() []string { return p.order },
	})
	descriptions := cfg.descriptions()
	var errs []error
	add := func(n spawn.Node) {
		p.nodes[n.Name()] = n
		p.order = append(p.order, n.Name())
		if p.traced != nil {
			p.traced[n.Name()] = p.obs.Node(n)
		}
	}
	for _, a := range cfg.Agents {
		tools, err := p.agentTools(a, "", opts, descriptions)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		maxTurns := a.MaxTurns
		if maxTurns == 0 {
			maxTurns = cfg.Limits.MaxTurns
		}
		toolsets := append(append([]tool.Toolset(nil), a.Toolsets...), p.builtins.mcpToolsets(cfg.MCPServers, a.MCPServers)...)
		ag, err := agent.New(agent.Config{
			Name: a.Name, Description: a.Description, SystemPrompt: p.systemPrompt(a), Model: p.obs.Model(a.Model),
			Tools: p.obs.Tools(tools), Toolsets: p.obs.Toolsets(toolsets), MaxTurns: maxTurns, MaxResponseBytes: a.MaxResponseBytes, Hooks: agentHooks, Output: a.Output,
			MaxToolCallsPerTurn: a.MaxToolCallsPerTurn, ContextWindow: contextWindow(a), CompactThreshold: a.CompactThreshold,
			Budget: a.Budget,
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.models[a.Name] = spawn.ModelChoice{Model: ag.Model(), ContextWindow: contextWindow(a)}
		add(newConnected(ag, a.Connections))
	}
	for _, t := range cfg.Teams {
		tm, err := team.New(team.Config{
			Name: t.Name, Description: t.Description, Mode: t.Mode, Members: t.Members,
			SharedPrompt: t.SharedPrompt, RequireAll: t.requireAll(),
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		add(newConnected(tm, t.Connections))
	}
	for _, n := range cfg.Nodes {
		n, err := p.withTools(cfg, opts, n, descriptions)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		add(n)
	}
	return errors.Join(errs...)
}

// lookup finds the node the runtime runs by name: the traced one when the
// pool traces its runs.
func (p *Pool) lookup(name string) (spawn.Node, bool) {
	if p.traced != nil {
		n, ok := p.traced[name]
		return n, ok
	}
	n, ok := p.nodes[name]
	return n, ok
}

// descriptions maps every node name of cfg to its description (for the
// worker tools).
func (cfg *Config) descriptions() map[string]string {
	out := map[string]string{}
	for _, a := range cfg.Agents {
		out[a.Name] = a.Description
	}
	for _, t := range cfg.Teams {
		out[t.Name] = t.Description
	}
	for _, n := range cfg.Nodes {
		out[n.Name()] = n.Description()
	}
	return out
}

// setApprovals hands the agents' tool approval policies to the hooks, or
// warns that nothing will enforce them.
func setApprovals(cfg Config, opts Options) {
	for _, a := range cfg.Agents {
		switch {
		case a.ToolApproval == nil:
		case opts.Hooks != nil:
			opts.Hooks.Approvals.Set(a.Name, a.ToolApproval)
		default:
			opts.Logger.Warn("tool_approval is not enforced: the pool has no Options.Hooks", "agent", a.Name)
		}
	}
	for name, policy := range cfg.NodeToolApproval {
		if opts.Hooks != nil {
			opts.Hooks.Approvals.Set(name, policy)
		}
	}
}

// limitsWithDefaults applies the manifest's defaults to zero limits.
func limitsWithDefaults(l config.Limits) config.Limits {
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&l.MaxDepth, config.DefaultMaxDepth}, {&l.MaxChildren, config.DefaultMaxChildren},
		{&l.MaxSpawns, config.DefaultMaxSpawns}, {&l.MaxTurns, config.DefaultMaxTurns},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	return l
}

// contextWindow is a's context window: its own, else its model's (asked
// before the model is wrapped for tracing, which would hide it).
func contextWindow(a AgentSpec) int {
	if a.ContextWindow > 0 {
		return a.ContextWindow
	}
	return model.ContextWindowOf(a.Model)
}
