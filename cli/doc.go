// Package cli is the agentpool command line: the cobra command tree of
// both of its binaries, cmd/agentpool-light (no Temporal SDK, no
// OpenTelemetry SDK or exporters, no gRPC) and cmd/agentpool-full (the
// same tree with Extensions for Temporal and OpenTelemetry export). The
// light binary replaces itself with agentpool-full (syscall.Exec, same
// arguments and environment) before a command acts when that command needs
// them: `worker`, a manifest with execution: {engine: temporal}, or
// telemetry export asked for by the OTEL_* environment or the manifest's
// observability block. What users type, agentpool (cmd/agentpool), is a
// front that links neither: it answers `version` and the top-level help
// and execs agentpool-light for everything else (internal/binaries).
//
//	agentpool run [-c FILE] [--agent NAME] [--output text|jsonl] [--db PATH] [--approve ask|allow|deny] PROMPT|-
//	agentpool validate FILE
//	agentpool version
//
// run's PROMPT is its words joined by spaces; a lone - reads it from stdin
// (at most 4 MiB, not blank).
//
// Exit codes of run: 0 when the run and every child session completed; 3
// when the run completed but a child session failed, a limit refused a
// spawn or a tool call was denied approval; 1 when the run failed or could not start (any command's error);
// 130 when cancelled.
//
// Text from models, tools and the store never drives the terminal: every
// control character in it but the line feed and tab is shown visibly
// (internal/termtext) on stderr, in every text output of sessions, and
// in run's answer when stdout is a terminal. run's answer piped to a file
// or a program is exact, as is JSON output (through a pipe the encoder's
// bytes; on a terminal with its C1 controls written as \u escapes, the same
// values).
//
// Approvals (docs/approvals.md): run and every serve command ask one
// approval broker (newApprovalBroker), with the manifest's approvals block
// and the permission rules of the project's Claude Code settings, which
// keep every "always" answer. run's terminal is a front end of it: one
// question at a time, the live view held meanwhile; every denial is a
// line on stderr and counts in the run's summary. serve opencode, web and
// agui, once their front end is attached, show again the requests of runs
// that waited when their process ended: a durable engine's (its
// ReopenApprovals), or, in this process, the runs of the store that they
// go on with (continueWaiting: pool.Pool.Waiting and Continue).
//
// Claude Code's files (docs/claude-code.md): openPool, after the
// manifest's own check, finds the user's, project's and local settings
// files (--setting-sources), plugins (--plugin-dir), agent files and
// commands (claudecode) and adds their hooks and agents to the
// manifest; the approval broker reads the permission rules of the same
// files (poolFlags.ruleFiles), run expands "/name args", and doctor
// prints it all.
package cli
