package pool

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/internal/hostallow"
	"github.com/agentpool/agentpool/team"
)

// nameRE is the rule for node names, as in the manifest (a worker becomes
// the tool ask_<name>, which models accept only in this alphabet).
// Compiled on first use, not at package init (start-up).
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`) })

// agentErr, teamErr and nodeErr format a problem of one entry of a Config
// as `agent "NAME": FIELD: message` (no field: `agent "NAME": message`).
func agentErr(name, field, format string, args ...any) error {
	return entryErr("agent", name, field, format, args...)
}

func teamErr(name, field, format string, args ...any) error {
	return entryErr("team", name, field, format, args...)
}

func entryErr(kind, name, field, format string, args ...any) error {
	prefix := fmt.Sprintf("%s %q: ", kind, name)
	if field != "" {
		prefix += field + ": "
	}
	return errors.New(prefix + fmt.Sprintf(format, args...))
}

// validate reports every problem of cfg: names (missing, invalid,
// duplicate across agents, teams and nodes), models, builtin toolsets,
// workers, tool approval policies, team modes and members, team cycles,
// the default node and negative limits.
func (cfg *Config) validate() error {
	var errs []error
	bad := func(err error) { errs = append(errs, err) }
	kinds := map[string]string{} // name -> "agent", "team" or "node"
	var names []string
	define := func(kind, name, where string) {
		switch {
		case name == "":
			bad(fmt.Errorf("%s: Name is required", where))
		case !nameRE().MatchString(name):
			bad(entryErr(kind, name, "", "invalid name: names start with a letter and hold only letters, digits, \"_\" and \"-\""))
		case kinds[name] != "":
			bad(entryErr(kind, name, "", "name is already used by %s %q (agents, teams and nodes share one namespace)", an(kinds[name]), name))
		default:
			kinds[name] = kind
			names = append(names, name)
		}
	}
	for i, a := range cfg.Agents {
		define("agent", a.Name, fmt.Sprintf("Config.Agents[%d]", i))
	}
	for i, t := range cfg.Teams {
		define("team", t.Name, fmt.Sprintf("Config.Teams[%d]", i))
	}
	for i, n := range cfg.Nodes {
		if n == nil {
			bad(fmt.Errorf("Config.Nodes[%d]: nil node", i))
			continue
		}
		define("node", n.Name(), fmt.Sprintf("Config.Nodes[%d]", i))
	}
	if len(names) == 0 && len(errs) == 0 {
		bad(errors.New("no agent, team or node: at least one is required"))
	}
	unknown := func(name string) string {
		return fmt.Sprintf("unknown agent, team or node %q (defined: %s)", name, strings.Join(names, ", "))
	}

	for _, a := range cfg.Agents {
		if a.Model == nil {
			bad(agentErr(a.Name, "Model", "a model is required"))
		}
		if a.MaxTurns < 0 {
			bad(agentErr(a.Name, "MaxTurns", "must not be negative, got %d", a.MaxTurns))
		}
		if a.MaxToolCallsPerTurn < 0 {
			bad(agentErr(a.Name, "MaxToolCallsPerTurn", "must not be negative, got %d", a.MaxToolCallsPerTurn))
		}
		if err := a.Budget.Check(); err != nil {
			bad(agentErr(a.Name, "Budget", "%v", err))
		}
		errs = append(errs, checkTools("agent", a, kinds, unknown)...)
		for pat, v := range a.ToolApproval {
			field := fmt.Sprintf("ToolApproval[%q]", pat)
			if _, err := path.Match(pat, ""); err != nil || strings.TrimSpace(pat) == "" {
				bad(agentErr(a.Name, field, "invalid tool name or pattern"))
			}
			if v != config.ApprovalAllow && v != config.ApprovalAsk && v != config.ApprovalDeny {
				bad(agentErr(a.Name, field, "unknown approval %q (known: allow, ask, deny)", v))
			}
		}
	}

	for _, t := range cfg.Teams {
		switch t.Mode {
		case team.Parallel, team.Sequential:
		case "":
			bad(teamErr(t.Name, "Mode", "a mode is required (team.Parallel or team.Sequential)"))
		default:
			bad(teamErr(t.Name, "Mode", "unknown team mode %q (known: parallel, sequential)", t.Mode))
		}
		if len(t.Members) == 0 {
			bad(teamErr(t.Name, "Members", "a team needs at least one member"))
		}
		for i, mem := range t.Members {
			field := fmt.Sprintf("Members[%d]", i)
			switch {
			case mem == t.Name:
				bad(teamErr(t.Name, field, "team %q cannot contain itself", t.Name))
			case kinds[mem] == "":
				bad(teamErr(t.Name, field, "%s", unknown(mem)))
			}
		}
		switch {
		case t.Mode == team.Parallel && t.ContinueOnFailure:
			bad(teamErr(t.Name, "ContinueOnFailure", "applies to sequential teams only (a parallel team runs every member; set RequireAll to fail it when any member fails)"))
		case t.Mode == team.Sequential && t.RequireAll:
			bad(teamErr(t.Name, "RequireAll", "applies to parallel teams only (a sequential team stops at its first failed member unless ContinueOnFailure is set)"))
		}
	}
	errs = append(errs, cfg.validateNodeTools(kinds, unknown)...)
	errs = append(errs, cfg.teamCycles()...)
	errs = append(errs, cfg.teamBudgets()...)
	errs = append(errs, cfg.validateCompat(kinds, unknown)...)

	if cfg.Default != "" && kinds[cfg.Default] == "" {
		bad(fmt.Errorf("Config.Default: %s", unknown(cfg.Default)))
	}
	for _, l := range []struct {
		name string
		v    int64
	}{
		{"MaxDepth", int64(cfg.Limits.MaxDepth)}, {"MaxChildren", int64(cfg.Limits.MaxChildren)},
		{"MaxSpawns", int64(cfg.Limits.MaxSpawns)}, {"MaxTurns", int64(cfg.Limits.MaxTurns)},
		{"SpawnTimeout", int64(cfg.Limits.SpawnTimeout)},
	} {
		if l.v < 0 {
			bad(fmt.Errorf("Config.Limits.%s: must not be negative", l.name))
		}
	}
	return errors.Join(errs...)
}

// checkTools reports the problems of the toolsets and workers of a (an
// agent, or the tools of a ToolNode: kind "node"): unknown or repeated
// builtin toolsets, allowed hosts (and without the fetch toolset),
// workers that are unknown, repeated or a itself.
func checkTools(kind string, a AgentSpec, kinds map[string]string, unknown func(string) string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, entryErr(kind, a.Name, field, format, args...))
	}
	for i, typ := range a.Builtin {
		field := fmt.Sprintf("Builtin[%d]", i)
		switch {
		case !slices.Contains(builtinToolsets, typ):
			bad(field, "unknown toolset type %q (known: %s)", typ, strings.Join(builtinToolsets, ", "))
		case slices.Index(a.Builtin, typ) < i:
			bad(field, "duplicate toolset %q", typ)
		}
	}
	for i, h := range a.FetchAllowedHosts {
		if err := hostallow.Check(h); err != nil {
			bad(fmt.Sprintf("FetchAllowedHosts[%d]", i), "%v", err)
		}
	}
	if len(a.FetchAllowedHosts) > 0 && !slices.Contains(a.Builtin, config.ToolsetFetch) {
		bad("FetchAllowedHosts", "set, but the %s has no %s toolset (Builtin)", kind, config.ToolsetFetch)
	}
	if a.Search != nil && !slices.Contains(a.Builtin, config.ToolsetSearch) {
		bad("Search", "set, but the %s has no %s toolset (Builtin)", kind, config.ToolsetSearch)
	}
	for i, w := range a.Workers {
		field := fmt.Sprintf("Workers[%d]", i)
		switch {
		case w.Name == a.Name:
			bad(field, "%s %q cannot be its own worker", kind, a.Name)
		case kinds[w.Name] == "":
			bad(field, "%s", unknown(w.Name))
		case slices.IndexFunc(a.Workers, func(o WorkerSpec) bool { return o.Name == w.Name }) < i:
			bad(field, "duplicate worker %q", w.Name)
		}
	}
	return errs
}

// an is kind with its article.
func an(kind string) string {
	if kind == "agent" {
		return "an agent"
	}
	return "a " + kind
}

// teamCycles reports every cycle of team membership (through other teams)
// once, at the member that closes it.
func (cfg *Config) teamCycles() []error {
	teams := map[string]*TeamSpec{}
	for i := range cfg.Teams {
		if t := &cfg.Teams[i]; teams[t.Name] == nil {
			teams[t.Name] = t
		}
	}
	const (
		unvisited = iota
		active
		done
	)
	state := map[string]int{}
	var stack []string
	var errs []error
	var visit func(tn string)
	visit = func(tn string) {
		state[tn] = active
		stack = append(stack, tn)
		for i, mem := range teams[tn].Members {
			if teams[mem] == nil || mem == tn {
				continue // self-membership is reported on its own
			}
			switch state[mem] {
			case unvisited:
				visit(mem)
			case active:
				cycle := append(slices.Clone(stack[slices.Index(stack, mem):]), mem)
				errs = append(errs, teamErr(tn, fmt.Sprintf("Members[%d]", i), "team cycle: %s", strings.Join(cycle, " -> ")))
			}
		}
		stack = stack[:len(stack)-1]
		state[tn] = done
	}
	for _, t := range cfg.Teams {
		if state[t.Name] == unvisited {
			visit(t.Name)
		}
	}
	return errs
}

// teamBudgets reports every team whose run cannot fit Limits.MaxSpawns (as
// config does for a manifest): it would run only part of its members.
func (cfg *Config) teamBudgets() []error {
	teams := map[string]*config.Team{}
	for _, t := range cfg.Teams {
		if teams[t.Name] == nil {
			teams[t.Name] = &config.Team{Name: t.Name, Members: t.Members}
		}
	}
	need := config.TeamSpawns(teams)
	var errs []error
	for _, t := range cfg.Teams {
		if n := need(t.Name); n > cfg.Limits.MaxSpawns {
			errs = append(errs, teamErr(t.Name, "Members",
				"team %q needs %d spawns per run (itself and %d members, counting members of member teams), more than Limits.MaxSpawns (%d)",
				t.Name, n, n-1, cfg.Limits.MaxSpawns))
		}
	}
	return errs
}
