package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/internal/binaries"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/acp"
)

func init() { serveCommands = append(serveCommands, newServeACPCmd) }

func newServeACPCmd(ext Extensions) *cobra.Command {
	var (
		f     poolFlags
		agent string
	)
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Serve the pool to an editor over ACP (JSON-RPC on stdin/stdout)",
		Long: "Serve the pool over the Agent Client Protocol: JSON-RPC 2.0, one message per line on " +
			"stdin/stdout; logs go to stderr. The session modes are the pool's agents and teams. " +
			"A session's cwd is its workspace when it is an existing directory (else --workspace, the " +
			"manifest's workspace or the current directory); the MCP servers the editor names are the " +
			"session's; an editor that advertises fs or terminal capabilities reads, writes and runs " +
			"the tools' files and commands. The server exits when stdin ends.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveACP(cmd, f, agent)
		},
	}
	f.register(cmd, ext)
	cmd.Flags().StringVar(&agent, "agent", "", "mode (agent or team) of new sessions (default: the manifest's default_agent)")
	return cmd
}

func serveACP(cmd *cobra.Command, f poolFlags, agent string) error {
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The hooks of the manifest (tool_approval policies, command hooks:
	// openPool installs them, once); a session's SessionStart and
	// SessionEnd hooks run once per ACP session. Approvals that the policy
	// asks for go to the broker, which the server is attached to while the
	// editor is connected: the editor is asked.
	reg := hook.New(hook.Options{Logger: log})
	broker := brokerFromManifest(&f, log)
	p, shutdown, err := openPool(f, pool.Options{Logger: log, Hooks: reg})
	if err != nil {
		return err
	}
	// After the manifest's hooks: PermissionRequest hooks answer before
	// anyone is asked. The manifest's approvals block and the project's
	// settings rules apply as in every serve command.
	approvals := broker()
	reg.UseBroker(approvals)
	defer shutdown() // last: flushes the spans of every prompt
	srv, err := acp.New(acp.Options{Pool: p, Agent: agent, Logger: log, Version: binaries.Version, Approvals: approvals})
	if err != nil {
		p.Close()
		return err
	}
	srv.UseHooks(reg)
	stopControl := listenControl(p, log) // sessions cancel, from another process
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, stopSignals...)
	defer stop()
	// An editor that crashes closes our stdin and stdout at once. A write
	// to the closed stdout must fail (the server then cancels the prompts)
	// rather than kill the process with SIGPIPE, so that the runs end
	// aborted and the store is flushed. Notify, not Ignore: an ignored
	// SIGPIPE would be inherited by the commands and MCP servers the tools
	// start.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	// On SIGINT/SIGTERM/SIGHUP Serve cancels the running prompts, waits for
	// them and returns.
	serveErr := srv.Serve(ctx, cmd.InOrStdin(), cmd.OutOrStdout())
	if errors.Is(serveErr, context.Canceled) {
		serveErr = nil
	}
	log.Info("acp: shutting down")
	// Background hooks still record into the store: they end first.
	closeHooks(reg)
	stopControl()
	return errors.Join(serveErr, p.Close())
}
