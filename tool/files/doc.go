// Package files is the `file_access` toolset: Read, Write, Edit, Glob,
// Grep and LS, with Claude Code's tool names and input field names
// (file_path, old_string, replace_all, output_mode, "-i", ...), so models
// trained on those tools and hook scripts that read tool_input.file_path
// work unchanged.
//
// Guarantees:
//
//   - Confinement. Every path is resolved by the run's workspace
//     (workspace.From, else the toolset's own): a relative path is taken
//     from the root, and a path that leaves the root (through "..", an
//     absolute path or a symbolic link, dangling or not) is refused with an
//     error result naming the root. Every file access then goes through
//     the workspace opened as an os.Root (workspace.Root), so a path whose
//     components are swapped for links to the outside after it was judged
//     fails instead of escaping: no file outside the root is ever opened,
//     created, renamed or listed. A symbolic link that stays inside is
//     followed by Read, Write and Edit (they act on its target) and, for a
//     file, listed and searched by Glob and Grep; Glob, Grep and LS never
//     descend into a symlinked directory and never list a file whose real
//     path is outside the root. Glob and Grep skip version-control
//     directories (.git, .hg, .svn, .jj); LS shows them without entering
//     them. Limit: a hard link inside the root to a file outside it is an
//     ordinary file of the root (nothing on disk says otherwise), and a
//     bind mount below the root is crossed; neither can be made by these
//     tools.
//   - Read before write. Write over an existing file and Edit require that
//     the same session (tool.Call.SessionID) read the file first and that
//     it has not changed since (size and modification time, and a content
//     hash where one is known). A session's own Write or Edit counts as a
//     read. The record is kept for at most 4,096 sessions, least recently
//     used dropped first.
//   - Safe writes. Write and Edit replace a file atomically (a temporary
//     file in the same directory, then a rename), keep its permission bits
//     and, for Edit, its line endings. Concurrent writes of one file by
//     this toolset are serialised.
//   - Bounded output. Read streams the file and shows at most 2,000 lines
//     of at most 2,000 characters each, and says what it left out; Glob
//     lists at most 100 files, LS 1,000 entries, Grep 30,000 characters.
//     Results never hold invalid UTF-8, whatever the file names or contents.
//   - Front ends. When the run's context carries a front end's file system
//     (workspace.FSFrom: an ACP editor), Read, Write and Edit go through it,
//     after the same confinement check, so the agent sees unsaved buffers
//     (the editor opens the path itself: what it does with a link swapped
//     in after the check is its own confinement);
//     Glob, Grep and LS always read the disk. Results carry the files
//     touched (Locations) and, for Write and Edit, whole-file diffs for
//     files up to 1 MiB.
//
// One Toolset serves every agent and session of a pool and is safe for
// concurrent use.
package files
