// Package settingsrules reads and writes the permission rules of a
// project's Claude Code settings files, so that an approval.Broker
// answers from them (approval.Options.Rules) and keeps its "always"
// answers in them, across restarts and for every front end alike.
//
// The files, as Claude Code reads them (Files, ForProject): the user's
// ~/.claude/settings.json, the project's .claude/settings.json and the
// personal .claude/settings.local.json, in the project directory (the
// manifest's directory: the CLAUDE_PROJECT_DIR of the command hooks).
//
// Guarantees:
//
//   - Rules: permissions.allow, permissions.ask and permissions.deny of
//     every file are merged; deny wins over ask, ask over allow, whichever
//     file they come from (in Claude Code a tool denied at any level
//     cannot be allowed at another). A matching deny rejects, a matching
//     allow allows, a matching ask leaves the request to a person.
//   - Forms read: "Tool" and "Tool(*)" (the whole tool, for every agent),
//     "Bash(prefix:*)" (commands that start with the prefix as a word),
//     "mcp__server" and "mcp__server__*" (every tool of an MCP server);
//     Task and Agent name agentpool's task. An allow prefix rule never
//     allows a command that holds a shell operator, redirection, variable or
//     substitution (; & | < > ` $ or a line break); a deny or ask prefix rule matches any
//     part of such a command. Other forms (paths, wildcards, domains) are
//     kept in the file, not applied, and listed in Warnings, one line each.
//   - The rules only answer requests that the agent's policy asked a
//     person about: they never allow a tool that tool_approval denies.
//   - Save adds an "always" answer to the local file as a tool-wide rule
//     (allow always to permissions.allow, reject always to
//     permissions.deny), once, and applies it at once. Every other key of
//     the file, and their order, is kept. The file is written atomically
//     (a temporary file in the same directory, synced, then renamed over
//     it), with mode 0600 when it is new and its own mode otherwise. A
//     file that is not valid JSON, or whose permissions are not the shape
//     Claude Code reads, is never overwritten: Save fails naming it.
//   - Reading is bounded like every configuration file (internal/bounded:
//     regular files only, 1 MiB each, 4 MiB together, nesting and values
//     checked before decoding); an error names the file, the line and the
//     field.
//   - A Store is safe for concurrent use. Two processes saving to the same
//     file at the same moment may lose one rule (the file is read, changed
//     and replaced, without a lock across processes).
package settingsrules
