package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a manifest; print its errors with file and line",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := config.Load(args[0])
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), err)
				return &exitError{code: 1, msg: ""}
			}
			// Warnings name accepted keys that change nothing (AgentPool
			// features agentpool does not use); the manifest is valid.
			for _, w := range m.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			// Building the pool checks what the schema cannot (models, tools).
			if _, err := pool.New(m, pool.Options{}); err != nil {
				return &exitError{code: 1, msg: fmt.Sprintf("%s: %v", args[0], err)}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%d agents, %d teams)\n", args[0], len(m.Agents), len(m.Teams))
			return nil
		},
	}
}
