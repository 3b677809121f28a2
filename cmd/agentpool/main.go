// Command agentpool is the front of the agentpool command line. It answers
// `agentpool version` and the top-level help (`agentpool`, `agentpool
// help`, `-h`, `--help`) itself and, for every other command line,
// replaces itself with agentpool-light, the command line proper
// (cli; agentpool-full when no agentpool-light is installed),
// found next to it, else on PATH.
//
// Why a front: Go runs the init of every package a binary links before
// main, and the command line links some 350 (SQLite, the TUI, MCP, HTTP,
// YAML...), whose inits and the pages of the 24 MB file they touch cost
// 12-16 ms where a hello world's take 2 (BENCHMARKS.md, "Start-up"). This
// binary links a few standard library packages (fmt, io, os, os/exec,
// path/filepath, syscall, and runtime/debug, whose ReadBuildInfo reads the
// commit go build recorded, for version) and internal/binaries, nothing else
// (TestFrontLinksLittle), so `version` and the help start as fast as a Go
// program can. What it costs every other command is one more program start
// before the command line's, about 10 ms on the 2-core test machine
// (BENCHMARKS.md: BenchmarkStartup/agentpool-run-help against
// agentpool-light-run-help).
//
// The exec (execve) keeps everything a command sees: the process (so its
// id, its parent and the signals sent to it), the arguments, the
// environment (plus binaries.EnvFromFront, which the command line removes
// at once), the open files and so stdin, stdout, stderr and the
// controlling terminal, and the exit status, which is the command line's.
//
// help.txt is the command line's top-level help, checked against it by
// TestFrontAnswersLikeTheCommandLine; after a change to the command tree,
// `go test ./cmd/agentpool -run TestFrontAnswersLikeTheCommandLine -update`
// writes it again.
package main

import (
	_ "embed"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/agentpool/agentpool/internal/binaries"
)

//go:embed help.txt
var help string

func main() { os.Exit(front(os.Args[1:], os.Stdout, os.Stderr, syscall.Exec)) }

// front runs the command line args: it answers version and the top-level
// help, else execs the command line with execve, which returns only on
// failure. It returns the exit status.
func front(args []string, stdout, stderr io.Writer, execve func(path string, argv, env []string) error) int {
	if answer, ok := ownAnswer(args); ok {
		if _, err := io.WriteString(stdout, answer); err != nil {
			io.WriteString(stderr, "agentpool: "+err.Error()+"\n")
			return 1
		}
		return 0
	}
	io.WriteString(stderr, "agentpool: "+execCommandLine(args, execve).Error()+"\n")
	return 1
}

// ownAnswer is what agentpool prints itself for args, if it answers them:
// exactly what the command line prints for them (stdout, exit 0). Any other
// form, `version --help` or `help run` included, goes to the command line,
// which owns its flags and errors.
func ownAnswer(args []string) (string, bool) {
	switch {
	case len(args) == 0:
		return help, true
	case len(args) > 1:
		return "", false
	case args[0] == "version":
		return binaries.VersionText(), true
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		return help, true
	}
	return "", false
}

// execCommandLine replaces the process with the command line, with args;
// it returns the error that says why it could not.
func execCommandLine(args []string, execve func(path string, argv, env []string) error) error {
	if os.Getenv(binaries.EnvFromFront) != "" {
		// This process was started by agentpool as its command line.
		self, _ := os.Executable()
		return fmt.Errorf("%s, started as the agentpool command line (%s), is the front binary again: rebuild it with `make build`", self, binaries.Light)
	}
	path, err := binaries.Find(binaries.Light, binaries.Full)
	if err != nil {
		return fmt.Errorf("agentpool %q needs the agentpool command line, %s (or %s), but %v; "+
			"build it with `make build` (bin/), or install every agentpool program with `go install github.com/agentpool/agentpool/cmd/...@latest`; "+
			"from a checkout, `go run ./cmd/%s` runs it directly",
			args[0], binaries.Light, binaries.Full, err, binaries.Light)
	}
	argv := append([]string{path}, args...)
	env := append(os.Environ(), binaries.EnvFromFront+"=1")
	return fmt.Errorf("starting %s: %w", path, execve(path, argv, env))
}
