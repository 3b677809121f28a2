// Package bounded reads the files and documents agentpool takes as
// configuration (manifests and the files they INHERIT, prompt files, MCP
// configurations, hook settings, plugin hooks files, SKILL.md files, a
// hook's JSON output) within bounds, so that a small hostile input cannot
// make a loader hang or grow without end.
//
// A Budget holds the bounds of one load (Limits; Config is the one every
// loader uses) and what the load has spent of them: ReadFile reads one
// file, CheckYAML and CheckJSON measure one parsed or raw document before
// anything decodes it.
//
// Guarantees:
//
//   - ReadFile never reads more than the per-file bound (nor what is left
//     of the load's total): the size is checked before reading (fstat on
//     the open file, so no check-then-use race), and the read itself is
//     limited, so a file that grows meanwhile is refused too. Only regular
//     files are read; a named pipe, device or socket is refused at once
//     (it is opened without blocking), never waited for or read from.
//   - CheckYAML walks a yaml.Node tree once, in time and memory linear in
//     the nodes as written, counting every node as the loader will see it:
//     an alias counts the whole subtree it stands for, at every use.
//     Nesting depth (aliases followed), nodes and nodes reached through
//     aliases are bounded; an alias that refers to a node containing it (a
//     cycle, which yaml.v3 builds for `a: &a [*a]`) is refused.
//   - CheckJSON bounds the nesting depth and the number of values (keys
//     included) of a JSON document without building it.
//   - A bound that is hit is an *Error naming the bound, its limit and,
//     for a document, the 1-based line of the node where it was passed.
//     Callers put the file name in front: "pool.yaml:3: too many YAML
//     alias expansions (...)".
//
// yaml.v3 has an alias check of its own, but only inside one call that
// decodes into Go values, and it lets up to about 400,000 values through
// per call (a 12 KB document expanding to 300,000 values decodes, 20 MB);
// loaders that walk yaml.Node trees by hand, or decode a tree piece by
// piece, never reach it.
package bounded
