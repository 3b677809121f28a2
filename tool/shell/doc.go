// Package shell is the execution toolset: Bash, BashOutput and KillShell,
// with Claude Code's tool names and input fields (so hooks written for
// Claude Code read tool_input.command, tool_input.timeout, ... unchanged).
//
// New(ws) returns a Toolset; Tools() gives its three tools; Close() kills
// every background shell at shutdown. A Toolset is safe for concurrent use
// by many agents and sessions.
//
// Bash{command, timeout?, description?, run_in_background?} runs
// "/bin/sh -c command" in the root of the run's workspace
// (workspace.From), with the process's environment and no standard input.
// With SourceEnvFile set, the session's environment file (Claude Code's
// CLAUDE_ENV_FILE, written by SessionStart hooks) is sourced first.
//
// Guarantees:
//
//   - The shell runs as the root of a process tree (internal/proctree):
//     on Linux a cgroup of its own when this process may make one, else
//     the processes found in /proc by descent and by the tree's mark in
//     their environment; elsewhere its process group. timeout is in
//     milliseconds: default 120000, at most 600000 (a larger value is
//     clamped and the result says so). At the timeout, or when the call's
//     context ends (or Close is called), the whole tree gets SIGTERM,
//     then SIGKILL if it still runs 2 s later, so background
//     grandchildren ("sleep 1000 &") die too, and on Linux those that
//     left the group and session ("setsid sleep 1000 &", a daemon's
//     double fork) as well. After the shell exits, whatever is left of
//     its tree is killed the same way: no process of the tree outlives
//     the call (a lasting process is what run_in_background is for).
//     When the process is a subreaper (the CLI; pool.Options.Subreaper)
//     it reaps the orphans it adopted, so none stays a zombie.
//   - The call never hangs on an output pipe: stdout and stderr share one
//     pipe (their interleaving is kept) that is read for at most 0.5 s
//     more once the tree is gone, for a process that escaped it (outside
//     Linux: one that left the process group) and still holds it.
//   - Output longer than 30,000 characters is cut in the middle: the first
//     and the last 15,000 are kept, with the line
//     "[... N characters cut from the middle of the output ...]" between
//     them and a note "Output truncated: N characters cut from the middle"
//     before the exit code.
//   - The result's last line is always the exit code: "Exit code: N";
//     a command ended by signal S gets 128+S as a shell reports it:
//     "Exit code: 143 (terminated by SIGTERM)". The lines above it say
//     "Command killed after timeout of N ms." or "Command cancelled; it
//     was killed." when so. Empty output reads "(no output)".
//   - A non-zero exit code is a normal result (IsError false), as a
//     failing command is information for the model, not a tool failure
//     (grep finding nothing exits 1); the exit code line says it. IsError
//     is true when the command could not be started, timed out or was
//     cancelled.
//   - Metadata: exit_code (-1 when unknown), truncated, timed_out,
//     cancelled (when so), cut_chars (when truncated), terminal_id (when
//     run in a front end's terminal); for a background start shell_id and
//     background.
//
// Background shells: with run_in_background the call returns at once:
// "Command running in background with ID: bash_N" and how to read it.
// Timeout does not apply. The output is buffered per shell (at most 1 MiB
// of unread output; the oldest is dropped and the next read says how many
// bytes). BashOutput{bash_id, filter?} returns the output produced since
// the previous BashOutput of that shell, lines matching filter (a Go
// regular expression) only when given (the others are consumed), cut like
// Bash's output, then notes and a last line "Status: running", "Status:
// exited with code N", "Status: killed" (by KillShell or Close) or
// "Status: terminated by SIGNAL". Once the status is not running the
// output shown is complete. KillShell{shell_id} kills the shell's whole
// process tree (SIGTERM, then SIGKILL after 2 s) and waits for it. When a
// background shell exits, what is left of its tree is killed too.
//
// A background shell belongs to the session that started it
// (tool.Call.SessionID): BashOutput and KillShell from another session
// get "No such shell". At most 16 background shells run at once per
// Toolset (a 17th start is an error result); the last 64 finished ones
// are kept for reading. Close kills every running background shell and
// cancels the foreground commands in flight, waits for all of them, and
// makes later calls error results: after Close no process started by the
// Toolset runs.
//
// Toolset.Background hands a background shell to a program that drives
// it itself rather than through BashOutput and KillShell (an external
// ACP agent's terminal/*, package external/acpagent): its output as it
// comes (Take), its end (Done, Exit) and Kill; the Toolset's bounds and
// Close still apply to it.
//
// Front-end terminals: when the run's context carries a
// workspace.Terminal (an ACP editor's), Bash runs the command through it
// instead, so the user watches it live: Start("/bin/sh", "-c", command,
// cwd root, output limit 30,000 bytes for a foreground command, 1 MiB for
// a background one), Wait with the timeout (Kill at the timeout or on
// cancellation), Output, Release. Metadata["terminal_id"] names the
// terminal for the editor to embed. BashOutput reads a background
// terminal's new output; KillShell and Close kill it; its terminal is
// released once it ended and its output was read into the shell's buffer.
// Process groups are then the front end's business.
//
// On systems without process groups (not Unix) only the shell itself is
// killed. The limits of a tree are proctree's (see its package doc).
package shell
