// Package workspace is the directory that the builtin file and shell tools
// act in, and the seams through which a front end lends those tools its own
// file system and terminals.
//
// Guarantees: Resolve never returns a path outside the root. A path is
// judged after cleaning ("..") and after following every symbolic link of
// the part of it that exists, so neither an absolute path, a ".." nor a
// symlink that points out of the root escapes it. Paths that do not exist
// yet (a file about to be written) are judged by their nearest existing
// parent.
//
// The root of a run is the pool's workspace unless the run's context
// carries another one (WithWorkspace: an ACP session's cwd). A front end
// that can read and write files or run commands for the agent (an ACP
// editor advertising fs and terminal capabilities) attaches an FS or a
// Terminal to the run's context; the file and shell tools then go through
// it, after the same confinement check.
package workspace
