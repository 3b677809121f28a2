package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/internal/binaries"
	"github.com/agentpool/agentpool/internal/proctree"
	"github.com/agentpool/agentpool/internal/termtext"
)

// exitError carries a process exit code with its one-line message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// Main runs the command line (os.Args) and returns the exit code. ext is
// what the binary adds to the light command tree: agentpool passes the zero
// Extensions, agentpool-full the Temporal engine and the OpenTelemetry
// exporters (see Extensions for what happens when one is missing). For
// every command but version (run, serve, worker and the rest) the process
// is a child subreaper with proctree.ReapAll, the policy of a program all
// of whose children are process trees (the shell tools', the hooks', the
// MCP servers'): what they leave behind, in a session of its own or
// orphaned, is reparented to agentpool, killed with its tree and reaped,
// and whatever still descends from agentpool when the command returns is
// killed.
func Main(ext Extensions) int {
	ext.execed = os.Getenv(binaries.EnvFromLight) != ""
	// Not for the processes the commands start (one may be agentpool).
	os.Unsetenv(binaries.EnvFromLight)
	os.Unsetenv(binaries.EnvFromFront)
	release := func() {}
	defer func() { release() }()
	root := newRootCmd(ext, func(cmd *cobra.Command) {
		// A command that starts no process (version) skips it: releasing
		// a ReapAll hold walks all of /proc for descendants to kill (107
		// openat and 183 read calls here), a cost that grows with the
		// number of processes on the machine.
		if cmd.Annotations[annotationNoProcesses] != "" {
			return
		}
		r, err := proctree.BecomeSubreaper(proctree.ReapAll)
		if err != nil && !errors.Is(err, errors.ErrUnsupported) {
			fmt.Fprintln(os.Stderr, "agentpool: warning: processes that leave their process group may outlive a run: "+err.Error())
		}
		release = r
	})
	root.SetArgs(serveAlias(root, os.Args[1:]))
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

// annotationNoProcesses marks a command that starts no process, so that
// Main does not make the process a subreaper for it.
const annotationNoProcesses = "agentpool/no-processes"

// newRootCmd builds the command tree; beforeRun is called before a command
// acts, once it is known to run in this binary (not agentpool-full's).
func newRootCmd(ext Extensions, beforeRun func(*cobra.Command)) *cobra.Command {
	root := &cobra.Command{
		Use:           "agentpool",
		Short:         "Run teams of LLM agents declared in a YAML manifest",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Before any command acts: a command that needs what this binary
		// lacks (Temporal, OTel export) becomes agentpool-full here.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := ext.execFullIfNeeded(cmd); err != nil {
				return err
			}
			beforeRun(cmd)
			return nil
		},
	}
	root.AddCommand(newRunCmd(ext), newValidateCmd(), newVersionCmd())
	for _, add := range extraCommands {
		root.AddCommand(add(ext))
	}
	// cobra adds `completion` when the command line runs; added now,
	// its group refuses unknown shells like the others. It writes to the
	// root's output as it is now (os.Stdout unless set before).
	root.InitDefaultCompletionCmd()
	rejectUnknownCommands(root)
	return root
}

// extraCommands lets other files of this package register commands
// (sessions, serve) without touching newRootCmd.
var extraCommands []func(Extensions) *cobra.Command

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:         "version",
		Short:       "Print the version, commit, date and Go release",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotationNoProcesses: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), binaries.VersionText())
			return err
		},
	}
}
