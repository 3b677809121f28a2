package cli

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/approval/settingsrules"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/hook/command"
	"github.com/agentpool/agentpool/internal/termtext"
	"github.com/agentpool/agentpool/pool"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a manifest; print its errors with file and line",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := config.LoadWith(args[0], manifestOptions())
			if err == nil {
				err = config.CheckFiles(args[0], m)
			}
			// The hook settings files are read as run reads them.
			reg := hook.New(hook.Options{Logger: slog.Default()})
			if err == nil {
				err = command.Install(reg, m, command.Options{})
			}
			// And the approval rules of the project's settings, as run
			// and the servers read them.
			var rules *settingsrules.Store
			if err == nil {
				rules, err = settingsrules.Load(settingsrules.ForProject(m.Dir()))
			}
			// A manifest's text is shown, never acted on by the terminal.
			errw := termtext.NewWriter(cmd.ErrOrStderr())
			if err != nil {
				fmt.Fprintln(errw, err)
				return &exitError{code: 1, msg: ""}
			}
			// Warnings name accepted keys that change nothing (AgentPool
			// features agentpool does not use); the manifest is valid.
			for _, w := range m.Warnings {
				fmt.Fprintln(errw, "warning:", w)
			}
			for _, w := range rules.Warnings() {
				fmt.Fprintln(errw, "warning: approval rules:", w)
			}
			// Building the pool checks what the schema cannot (models, tools).
			p, err := pool.New(m, pool.Options{Hooks: reg, Registry: newRegistry()})
			if err != nil {
				return &exitError{code: 1, msg: fmt.Sprintf("%s: %v", args[0], err)}
			}
			p.Close()
			out := termtext.NewWriter(cmd.OutOrStdout())
			fmt.Fprintf(out, "%s: ok (%d agents, %d teams)\n", args[0], len(m.Agents), len(m.Teams))
			for _, r := range rules.Rules() {
				fmt.Fprintf(out, "approval rule: %s %s (%s)\n", r.List, r.Text, r.File)
			}
			return nil
		},
	}
}
