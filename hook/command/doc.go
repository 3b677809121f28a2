// Package command runs command hooks written for Claude Code or Codex (the
// "hooks" object of a settings.json, a hooks.json, or a Claude Code plugin
// directory) at the hook points of a hook.Registry, so that a script
// written for Claude Code behaves the same, event for event:
// docs/spec/HOOKS.md §4, and docs/hooks.md for every event and field.
//
// Load(m) builds the registry of a manifest: the agents' tool_approval
// policies and the command hooks of the files listed in hooks.settings
// (one path or a list, relative to the manifest's directory, merged in
// order). Pass it as pool.Options{Hooks: reg}, and close it when done.
//
// Events and where they run:
//
//	SessionStart        session/start: once per session (an ACP session's first prompt); context is injected
//	UserPromptSubmit    agent/prompt-submit of a root session only: the user's prompt, not a delegation's
//	PreToolUse          tools/pre-execute; deny, ask (approval) or allow, updatedInput
//	PermissionRequest   approval/request, ahead of the approvers: allow or deny the call
//	Notification        approval/request, while the approvers are asked (permission_prompt)
//	PostToolUse         tools/post-execute of a tool that succeeded
//	PostToolUseFailure  tools/post-execute of a tool that failed
//	Stop                agent/turn-stop of a root session (a root team's at its end)
//	SubagentStart       subagent/start of every child (teams and their members included)
//	SubagentStop        agent/turn-stop of a child, or subagent/end of a child that did not stop on its own
//	SessionEnd          session/end: once per session (an ACP session's close or disconnection)
//	PreCompact          agent/pre-compact: before older turns are summarised; matched by trigger (auto, manual)
//
// Each hook gets one JSON object on stdin (with a trailing newline):
// session_id (the root session), transcript_path (the root session's
// transcript, in Claude Code's JSONL format), cwd, permission_mode,
// hook_event_name, inside a subagent agent_id, agent_type and
// agent_transcript_path, and the event's own fields, with the tools in
// Claude Code's vocabulary (task is Task).
//
// Guarantees:
//
//   - A hook runs as "/bin/sh -c COMMAND", or with args as the executable
//     itself, in the project directory (the manifest's directory), with
//     CLAUDE_PROJECT_DIR set and ${CLAUDE_PROJECT_DIR} substituted (and
//     CLAUDE_PLUGIN_ROOT for a plugin's hooks), as the root of a process
//     tree (internal/proctree: on Linux a cgroup of its own where this
//     process may make one, else the processes found by descent and by
//     the tree's mark in their environment; elsewhere its process group).
//     At its timeout (default 600 s), when the run is cancelled and when
//     the hook exits the whole tree is killed, on Linux what left the
//     process group and session (setsid, a double fork) included, and the
//     run goes on: a failing, hanging or crashing hook is a non-blocking
//     error, logged and recorded, never a failed run.
//   - Exit code 0: stdout is parsed as JSON when it is JSON. Exit code 2:
//     block, the reason is stderr. Any other code: non-blocking error.
//   - A hook's stdout and stderr are kept to 1 MiB each. Stdout past that
//     is not applied at all (its cut JSON or text would mean something
//     else): the run is a non-blocking error whose record says so. JSON
//     output is checked for nesting and values (internal/bounded) before
//     it is decoded.
//   - Settings files are read within internal/bounded's bounds: regular
//     files only (a named pipe is refused, never waited for), 1 MiB each
//     and 4 MiB together, checked before they are read; nesting and values
//     are checked before decoding, and the error names the file, the line
//     and the bound.
//   - The matching hooks of one event run concurrently (an identical
//     command once); the strictest decision wins (deny > ask > allow), and
//     the agent's tool_approval policy takes part in that comparison.
//     "continue": false stops what the point can stop: it blocks the
//     prompt, denies the tool call, blocks with feedback after a tool, and
//     ends the agent at Stop / SubagentStop (winning over a block).
//   - Async hooks run in the background under their timeout; closing the
//     registry waits for them until its context ends, then kills them.
//   - Every SubagentStart has its SubagentStop. SessionStart and
//     SessionEnd fire once per session.
//   - Loop guard: a Stop / SubagentStop hook called again after it made the
//     agent continue (a block or additionalContext) gets stop_hook_active:
//     true; after 8 consecutive continues the agent stops anyway (recorded
//     as a hook_loop_guard event).
//   - Transcripts are written under Options.TranscriptDir (a temporary
//     directory removed with the registry when unset), brought up to date
//     before a hook that gets their path runs and completed when the
//     session ends; CleanTranscripts makes a store delete them with their
//     sessions.
//   - Every run is recorded in the session's event log as
//     event.Custom{EventType: "hook_run"} with hook_event, command,
//     decision, duration_ms, exit_code (and matcher, reason, error,
//     timed_out, tool_name, async ... when they apply), emitted into the
//     session's sink so that the pool's recorder stores it in stream order.
//     SubagentStart runs, and a SubagentStop run at a child's end, are
//     recorded in the parent's log. Runs outside the run's stream
//     (SessionStart, SessionEnd, a root team's Stop, async hooks) are
//     appended to the session's log in the store and not streamed, so a
//     stream still begins with run_started and ends with the run's final
//     event.
package command
