// Package gitignore matches paths against .gitignore files as git does
// (gitignore(5)): comments, blank lines, trailing spaces, escapes, `!`
// negation, a trailing `/` for directories only, a `/` at the start or in
// the middle anchoring a pattern to its file's directory, `*`, `?`,
// brackets, and `**` as a whole path segment (any number of directories).
// The checkpoint scans use it to skip what a workspace ignores.
//
// Guarantees: a Matcher does no I/O (its caller reads the files, so that
// what is read is bounded where the walk is); the last matching pattern
// decides, patterns of a deeper .gitignore after those of the files above
// it; Match does not look at a path's parent directories (a walk skips an
// ignored directory instead, which is why git cannot re-include a file
// under one), Ignored does. A pattern git would reject (an unclosed
// bracket) matches nothing. Not read: .git/info/exclude, core.excludesFile.
package gitignore
