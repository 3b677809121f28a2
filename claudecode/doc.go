// Package claudecode finds the files a Claude Code user already has, as
// Claude Code finds them, so that `agentpool run` and every `serve`
// command use them unchanged (docs/claude-code.md):
//
//   - settings files, lowest precedence first: the user's
//     ~/.claude/settings.json ($CLAUDE_CONFIG_DIR when set), the project's
//     .claude/settings.json and .claude/settings.local.json, chosen with
//     Sources (--setting-sources user,project,local). Their hooks all run
//     (Claude Code merges hook lists), their permission rules are read by
//     approval/settingsrules from the same files (RuleFiles), and
//     enabledPlugins is merged key by key, the higher file winning;
//   - plugins: enabledPlugins resolved through
//     ~/.claude/plugins/installed_plugins.json, and --plugin-dir
//     directories, each with its hooks/hooks.json, agents/*.md and
//     commands/*.md;
//   - agent files (config.ParseAgentFile): a plugin's, the user's
//     ~/.claude/agents, the project's .claude/agents, a later one winning
//     on a name clash; an agent of the manifest wins over them all;
//   - command files (.claude/commands/*.md, the user's and the plugins'):
//     listed, and expanded by `run "/name args"`.
//
// The project directory is the manifest's directory (the working
// directory for the built-in manifest and ./agentpool.yaml), the same one
// the command hooks run in and settingsrules writes "always" answers to.
// Unlike Claude Code, nothing walks up to a git root.
//
// Everything read is bounded: settings files by internal/bounded's Config,
// agent and command files by config.AgentFiles (256 KiB each, 512 files).
// A file that is absent is skipped; one that cannot be read or parsed is
// an error naming it (and the line); what is found but cannot be used
// (a plugin enabled but not installed) is a Problem, which a run logs
// and `agentpool doctor` reports with a non-zero exit.
package claudecode
