// Package config loads and validates the agentpool YAML manifest: the file
// that declares a pool's agents (model, system prompt, toolsets, workers,
// tool approval policy), its teams (parallel or sequential groups of agents
// and other teams), the default entry point, storage, hook settings and
// runtime limits.
//
// Load reads a manifest from disk and Parse validates manifest bytes. Both
// return either a fully validated *Manifest or an *Error; a manifest is never
// returned alongside an error. Default returns the built-in demo pool, embedded
// from default.yaml, which runs offline on the deterministic test model.
//
// Guarantees:
//
//   - Every problem is reported, not only the first. An *Error carries one
//     Issue per problem, sorted by line, and its message has one line per
//     issue in the form
//
//     agentpool.yaml:12: agents.writer.model: unknown model type "tset"
//
//     that is: the file name as given to Load or Parse, the 1-based line of
//     the offending YAML node, the dotted field path (list elements as
//     "workers[0]") and the message. YAML syntax errors carry the file and
//     the line of the problem too (not the line where the YAML parser's
//     enclosing context began, which is what it reports).
//
//   - Unknown keys are errors at every level, never silently ignored; when a
//     known key is close, the message suggests it ("did you mean ...?"). Keys
//     that exist but do not apply to the chosen model type (for example
//     "turns" on an openai model) are errors as well. The only exception is
//     keys starting with "x-", ignored at every level so that they can hold
//     YAML anchors for reuse.
//
//   - Manifests written for AgentPool (the Python project) load unchanged:
//     its keys are accepted, mapped onto agentpool's features, or refused
//     with a one-line error that says why (those that need Python say "not
//     supported in a Go runtime"); keys accepted without effect are listed
//     in Manifest.Warnings. docs/agentpool-compat.md is the table of every
//     key. INHERIT (other manifest files merged under this one) and
//     inherits (an agent built on another) are resolved before validation;
//     an issue in an inherited file names that file.
//
//   - Cross references are checked: default_agent, worker names and team
//     members must name defined agents or teams; agents and teams share one
//     namespace; a team may not contain itself, directly or through other
//     teams; names match ^[A-Za-z][A-Za-z0-9_-]*$. A team whose run needs
//     more spawns than limits.max_spawns (one for itself, one per member,
//     members of member teams included; TeamSpawns) is an error at its
//     line: it could only ever run part of its members.
//
//   - An agent without a model gets the manifest's default_model, else the
//     test model (with a warning).
//
//   - Defaults are applied: zero limits take DefaultMaxDepth,
//     DefaultMaxChildren, DefaultMaxSpawns and DefaultMaxTurns (0 is the
//     default, never "unlimited" nor "none"); workers get
//     ResetHistoryOnRun=true; teams get RequireAll=true when sequential and
//     false when parallel, unless set otherwise. Negative limits, token
//     counts, prices and durations are errors, and so is a base_url that is
//     no http(s) URL with a host, or whose query does not parse or that has
//     a fragment (its query is sent with every request, as written).
//
//   - Hook settings files are not read by Load (MCP config files are);
//     CheckFiles reports the ones that are missing, at their lines.
//
//   - Input is bounded (internal/bounded, bounded.Config): the manifest
//     and every file it reads (INHERIT files, prompt files, MCP
//     configuration files) are regular files of at most 1 MiB each, 4 MiB
//     and 64 files together (a file named again is counted again),
//     checked before they are read. Each YAML document is measured before
//     anything walks it, each alias counted at every use without being
//     expanded: at most 100 levels of nesting, 250,000 nodes over the
//     manifest and its INHERIT files, 100,000 of them reached through
//     aliases, and no alias inside the node it names. A bound that is hit
//     is an issue at the line where it was passed
//
//     pool.yaml:7: too many YAML alias expansions (more than 100000 nodes reached through aliases)
//
//     or at the entry that names a file over a size bound. A bound hit by
//     the manifest or an INHERIT file ends the load there, with that one
//     issue. A manifest of nested aliases is refused in milliseconds,
//     having been read only as written.
//
// An agent's tool_approval maps tool names, path.Match patterns ("ask_*")
// or "*" to allow, ask or deny (ToolApprovalFor says which entry applies);
// the hook registry applies it before every tool call, "ask" going to an
// approver (package hook, approval/request) and denying when there is none.
// The top-level approvals block ({timeout: 10m, unattended: deny|allow})
// bounds the wait for a person's answer and sets the answer when nobody
// can be asked (docs/approvals.md).
//
// YAML anchors, aliases and merge keys ("<<") are supported. A manifest holds
// exactly one YAML document.
package config
