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
// Resolve judges a path at one moment; the path may change after it
// (a component swapped for a symbolic link). Open returns a Root through
// which the path is then reached: an os.Root, which fails for a component
// that leads out of the root (or is an absolute link) instead of
// following it, so no file outside the root is ever opened, created,
// renamed or listed through it. Limits: a hard link to an outside file
// and a bind mount below the root look like any other file or directory
// of the root and are not detected.
//
// The root of a run is the pool's workspace unless the run's context
// carries another one (WithWorkspace: an ACP session's cwd). A front end
// that can read and write files or run commands for the agent (an ACP
// editor advertising fs and terminal capabilities) attaches an FS or a
// Terminal to the run's context; the file and shell tools then go through
// it, after the same confinement check.
package workspace
