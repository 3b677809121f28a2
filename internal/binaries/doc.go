// Package binaries is what agentpool's three programs agree on: their
// names, their version text, the environment marks of an exec from one to
// another, and how one finds another (Find). It imports only fmt, os,
// os/exec, path/filepath, runtime, runtime/debug (for what the build
// recorded of its commit: VersionText) and strings, because the front binary (cmd/agentpool)
// links it and must start as fast as a Go program can: every package a
// binary links runs its init before main, and the command line's
// (cmd/agentpool-light) take six times a hello world's (BENCHMARKS.md,
// "Start-up").
//
// The programs, by file name:
//
//   - agentpool (Front): answers `version` and the top-level help itself,
//     and replaces itself (execve: same process, arguments, environment,
//     open files and terminal) with the command line for everything else;
//   - agentpool-light (Light): the command line (cli) without the
//     Temporal SDK, gRPC and the OpenTelemetry SDK and exporters;
//   - agentpool-full (Full): the same command line with them, which
//     agentpool-light execs for `worker`, temporal manifests and telemetry
//     export.
package binaries
