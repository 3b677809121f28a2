package cli

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/approval/settingsrules"
	"github.com/agentpool/agentpool/claudecode"
	"github.com/agentpool/agentpool/config"
)

// claudeFlags are Claude Code's own flags for its files
// (docs/claude-code.md): which settings files are read, and plugin
// directories loaded whatever the settings say.
type claudeFlags struct {
	sources    string
	pluginDirs []string
	// found is what openPool discovered (a pointer, so that the copies
	// of poolFlags share it): run expands slash commands with it, the
	// approval broker reads the permission rules of the same files.
	found *claudecode.Found
}

func (c *claudeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.sources, "setting-sources", "user,project,local",
		"Claude Code settings files read, comma-separated: user (~/.claude/settings.json), project (.claude/settings.json), local (.claude/settings.local.json)")
	cmd.Flags().StringArrayVar(&c.pluginDirs, "plugin-dir", nil, "load a Claude Code plugin directory (its hooks, agents and commands); repeatable")
}

// discover finds the Claude Code files of m's project (its directory).
func (c *claudeFlags) discover(m *config.Manifest) (*claudecode.Found, error) {
	src, err := claudecode.ParseSources(c.sources)
	if err != nil {
		return nil, err
	}
	return claudecode.Discover(claudecode.Options{
		ProjectDir: m.Dir(),
		Sources:    src,
		PluginDirs: c.pluginDirs,
		Agent:      config.AgentFileOptions{DefaultModel: m.DefaultModel, Options: manifestOptions()},
	})
}

// applyClaude discovers and adds the Claude Code files to m (hooks,
// agents), logging what a run should know (problems, shadowed agents,
// what the agent files ask that agentpool does not do). It keeps what it
// found for the command (claudeFlags.found).
func (f *poolFlags) applyClaude(m *config.Manifest, log *slog.Logger) error {
	if f.claude == nil {
		f.claude = &claudeFlags{sources: claudecode.AllSources().String()}
	}
	found, err := f.claude.discover(m)
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.Default()
	}
	for _, p := range found.Problems {
		log.Warn("claude code: " + p)
	}
	for _, a := range found.Agents {
		for _, w := range a.Warnings {
			log.Warn("claude code: " + w)
		}
	}
	for _, n := range found.Apply(m) {
		log.Info("claude code: " + n)
	}
	f.claude.found = found
	return nil
}

// ruleFiles are the settings files whose permission rules apply: those
// discovery chose, else (no discovery ran) every file of the manifest's
// project.
func (f *poolFlags) ruleFiles(m *config.Manifest) settingsrules.Files {
	if f.claude != nil && f.claude.found != nil {
		return f.claude.found.RuleFiles()
	}
	return settingsrules.ForProject(m.Dir())
}
