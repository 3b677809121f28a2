// Command agentpool runs teams of LLM agents declared in a YAML manifest.
//
//	agentpool run [-c FILE] [--agent NAME] [--output text|jsonl] [--db PATH] PROMPT
//	agentpool validate FILE
//	agentpool version
//
// Exit codes of run: 0 when the run and every child session completed; 3
// when the run completed but a child session failed or a limit refused a
// spawn; 1 when the run failed or could not start (any command's error);
// 130 when cancelled.
//
// Text from models, tools and the store never drives the terminal: every
// control character in it but the line feed and tab is shown visibly
// (internal/termtext) on stderr, in every text output of sessions, and
// in run's answer when stdout is a terminal. run's answer piped to a file
// or a program is exact, as is JSON output (through a pipe the encoder's
// bytes; on a terminal with its C1 controls written as \u escapes, the same
// values).
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/internal/proctree"
	"github.com/agentpool/agentpool/internal/termtext"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// exitError carries a process exit code with its one-line message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func main() { os.Exit(execute()) }

// execute runs the command line and returns the exit code. For all of it
// (run, serve, worker and the rest) the process is a child subreaper with
// proctree.ReapAll, the policy of a program all of whose children are
// process trees (the shell tools', the hooks', the MCP servers'): what
// they leave behind, in a session of its own or orphaned, is reparented
// to agentpool, killed with its tree and reaped, and whatever still
// descends from agentpool when the command returns is killed.
func execute() int {
	release, err := proctree.BecomeSubreaper(proctree.ReapAll)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		fmt.Fprintln(os.Stderr, "agentpool: warning: processes that leave their process group may outlive a run: "+err.Error())
	}
	defer release()
	root := newRootCmd()
	if err := root.Execute(); err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if msg := err.Error(); msg != "" {
			// An error can quote a model, a tool or a stored session.
			fmt.Fprintln(os.Stderr, "agentpool: "+termtext.Text(strings.TrimSpace(msg)))
		}
		return code
	}
	return 0
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "agentpool",
		Short:         "Run teams of LLM agents declared in a YAML manifest",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(), newValidateCmd(), newVersionCmd())
	for _, add := range extraCommands {
		root.AddCommand(add())
	}
	return root
}

// extraCommands lets other files of this package register commands
// (sessions, serve) without touching newRootCmd.
var extraCommands []func() *cobra.Command

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "agentpool "+version)
			return nil
		},
	}
}
