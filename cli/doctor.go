package cli

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/approval/settingsrules"
	"github.com/agentpool/agentpool/claudecode"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/hook/command"
	"github.com/agentpool/agentpool/internal/termtext"
	"github.com/agentpool/agentpool/pool"
)

func init() {
	extraCommands = append(extraCommands, func(Extensions) *cobra.Command { return newDoctorCmd() })
}

func newDoctorCmd() *cobra.Command {
	var (
		manifest string
		claude   claudeFlags
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show the Claude Code files, hooks, agents and commands run would use",
		Long: "Show what run and serve would use, and from where: the manifest, Claude Code's settings files in their " +
			"precedence, the hooks of each event, the permission rules, the plugins, the agents and the commands. " +
			"Exits 1 when something is broken (a file that cannot be read or parsed, a plugin enabled but not installed, " +
			"a manifest or agent that does not build).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d := &doctor{out: termtext.NewWriter(cmd.OutOrStdout())}
			d.run(manifest, &claude)
			if d.broken > 0 {
				return &exitError{code: 1, msg: "doctor: " + plural(d.broken, "problem")}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&manifest, "config", "c", "", "manifest file (default ./agentpool.yaml, else the built-in demo)")
	claude.register(cmd)
	return cmd
}

// doctor writes its report section by section; broken counts what is
// broken.
type doctor struct {
	out    io.Writer
	broken int
}

func (d *doctor) section(title string) { fmt.Fprintf(d.out, "\n%s\n", title) }

func (d *doctor) line(format string, args ...any) {
	fmt.Fprintf(d.out, "  "+format+"\n", args...)
}

func (d *doctor) problem(format string, args ...any) {
	d.broken++
	d.line("✗ "+format, args...)
}

func (d *doctor) run(path string, claude *claudeFlags) {
	m, err := loadManifest(path)
	if err == nil {
		err = config.CheckFiles(manifestName(path), m)
	}
	fmt.Fprintf(d.out, "manifest: %s\n", manifestName(path))
	if err != nil {
		d.problem("%s", indent(err.Error()))
		m = config.Default()
		m.Agents, m.AgentOrder = map[string]*config.Agent{}, nil
	}
	found, err := claude.discover(m)
	if err != nil {
		d.problem("%s", indent(err.Error()))
		return
	}
	fmt.Fprintf(d.out, "project: %s\n", found.ProjectDir)
	d.settings(m, found)
	declared := map[string]bool{}
	for _, name := range m.AgentOrder {
		declared[name] = true
	}
	notes := found.Apply(m)
	d.hooks(m)
	d.rules(found.RuleFiles())
	d.plugins(found)
	d.agents(m, declared, found, notes)
	d.commands(found)
	if len(found.Problems) > 0 {
		d.section("problems:")
		for _, p := range found.Problems {
			d.problem("%s", p)
		}
	}
	if len(m.Agents) > 0 {
		d.build(m)
	}
}

func (d *doctor) settings(m *config.Manifest, f *claudecode.Found) {
	d.section(fmt.Sprintf("settings files, lowest precedence first (--setting-sources %s):", f.Sources))
	for _, s := range f.Settings {
		state := "absent"
		if s.Exists {
			state = "found"
		}
		d.line("%-8s %s (%s)", s.Scope, s.Path, state)
	}
	for _, s := range m.Hooks.Settings {
		d.line("%-8s %s (hooks.settings)", claudecode.ScopeManifest, m.ResolvePath(s))
	}
	if len(f.Settings) == 0 && len(m.Hooks.Settings) == 0 {
		d.line("none")
	}
}

func (d *doctor) hooks(m *config.Manifest) {
	d.section("hooks (every matching hook runs, whichever file it is in):")
	paths := make([]string, len(m.Hooks.Settings))
	for i, p := range m.Hooks.Settings {
		paths[i] = m.ResolvePath(p)
	}
	s, err := command.LoadSettings(paths...)
	if err != nil {
		d.problem("%s", indent(err.Error()))
		return
	}
	events := make([]string, 0, len(s.Hooks))
	for ev, gs := range s.Hooks {
		if len(gs) > 0 {
			events = append(events, ev)
		}
	}
	sort.Strings(events)
	for _, ev := range events {
		n, from := 0, map[string]bool{}
		var files []string
		for _, g := range s.Hooks[ev] {
			n += len(g.Hooks)
			if !from[g.Source] {
				from[g.Source] = true
				files = append(files, g.Source)
			}
		}
		d.line("%-18s %s (%s)", ev, plural(n, "hook"), strings.Join(files, ", "))
	}
	if len(events) == 0 {
		d.line("none")
	}
	for _, w := range s.Ignored {
		d.line("warning: %s", w)
	}
}

func (d *doctor) rules(files settingsrules.Files) {
	d.section("permission rules (deny over ask over allow):")
	rules, err := settingsrules.Load(files)
	if err != nil {
		d.problem("%s", indent(err.Error()))
		return
	}
	for _, r := range rules.Rules() {
		d.line("%-5s %s (%s)", r.List, r.Text, r.File)
	}
	if len(rules.Rules()) == 0 {
		d.line("none")
	}
	for _, w := range rules.Warnings() {
		d.line("warning: %s", w)
	}
	d.line("\"always\" answers are saved to %s", rules.LocalFile())
}

func (d *doctor) plugins(f *claudecode.Found) {
	d.section("plugins:")
	for _, p := range f.Plugins {
		hooks := "no hooks"
		if p.Hooks != "" {
			hooks = "hooks"
		}
		d.line("%s %s (%s; %s)", p.Name, p.Dir, p.From, hooks)
	}
	if len(f.Plugins) == 0 {
		d.line("none")
	}
}

func (d *doctor) agents(m *config.Manifest, declared map[string]bool, f *claudecode.Found, notes []string) {
	d.section("agents (the manifest's win, then the project's, the user's, the plugins'):")
	fromFile := map[string]string{}
	for _, a := range f.Agents {
		fromFile[a.Agent.Name] = a.Scope + " " + a.Path // the last one wins
	}
	for _, name := range m.AgentOrder {
		where := "manifest"
		if !declared[name] {
			where = fromFile[name]
		}
		d.line("%-20s %s", name, where)
	}
	for _, a := range f.Agents {
		for _, w := range a.Warnings {
			d.line("warning: %s", w)
		}
	}
	for _, n := range notes {
		d.line("note: %s", n)
	}
}

func (d *doctor) commands(f *claudecode.Found) {
	d.section("commands (run \"/name args\"; the project's win, then the user's, the plugins'):")
	for _, c := range f.Commands {
		d.line("/%-19s %s %s %s", c.Name, c.Scope, c.Path, c.Description)
	}
	if len(f.Commands) == 0 {
		d.line("none")
	}
}

// build builds the pool as run would (models are made, nothing runs).
func (d *doctor) build(m *config.Manifest) {
	d.section("pool:")
	reg := hook.New(hook.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := command.Install(reg, m, command.Options{}); err != nil {
		d.problem("%s", indent(err.Error()))
		return
	}
	defer closeHooks(reg)
	p, err := pool.New(m, pool.Options{Hooks: reg, Registry: newRegistry()})
	if err != nil {
		d.problem("%s", indent(err.Error()))
		return
	}
	p.Close()
	d.line("builds: %s, %s; a run starts with %s", plural(len(m.Agents), "agent"), plural(len(m.Teams), "team"), m.EntryPoint())
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }
