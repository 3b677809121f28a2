package cli

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/external/acpagent/mcprelay"
)

// mcpRelayCmd is the hidden command an external agent that takes MCP
// over stdio only starts to reach the tools served to it
// (docs/external-agents.md, "Our tools over MCP").
const mcpRelayCmd = "mcp-relay"

func init() {
	extraCommands = append(extraCommands, func(Extensions) *cobra.Command { return newMCPRelayCmd() })
}

func newMCPRelayCmd() *cobra.Command {
	return &cobra.Command{
		Use:    mcpRelayCmd,
		Short:  "Relay stdio MCP to agentpool's loopback endpoint (started by external agents)",
		Hidden: true,
		Args:   cobra.NoArgs,
		// It starts no process: no subreaper, no /proc walk at its end.
		Annotations: map[string]string{annotationNoProcesses: "true"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			url := os.Getenv(mcprelay.EnvURL)
			if url == "" {
				return errors.New(mcpRelayCmd + ": " + mcprelay.EnvURL + " is not set (this command is started by agentpool's external agents)")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			return mcprelay.Run(ctx, mcprelay.Options{URL: url, Stdin: os.Stdin, Stdout: os.Stdout, Logger: log, ParentPID: os.Getppid()})
		},
	}
}
