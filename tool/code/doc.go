// Package code is AgentPool's `code` toolset: format_code runs the
// formatter of a file's language (gofmt, ruff, rustfmt, prettier, ...) and
// ast_grep searches or rewrites a file by syntax tree with the ast-grep
// program.
//
// Guarantees:
//   - Files are read and written through the workspace's os.Root
//     (workspace.Root): a path outside the workspace, or one that a
//     symbolic link leads out of it, is refused and never reached.
//   - The programs run as process trees (internal/proctree) in the
//     workspace directory with the file on standard input; a call's end,
//     its cancellation or the timeout kills the whole tree, and nothing
//     they started outlives the call.
//   - Their output is bounded (maxOutput); a formatter whose output
//     exceeds it, fails or is missing leaves the file unchanged.
//   - A missing program is a tool error that names what to install; a
//     program is never downloaded.
package code
