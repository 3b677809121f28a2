package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/agui"
)

func init() {
	serveCommands = append(serveCommands, newServeAGUICmd)
}

// defaultAGUIAddr is loopback only: the server has no authentication.
const defaultAGUIAddr = "127.0.0.1:8765"

func newServeAGUICmd() *cobra.Command {
	var (
		f    poolFlags
		addr string
	)
	cmd := &cobra.Command{
		Use:   "agui",
		Short: "Serve the pool over AG-UI (HTTP POST, server-sent events)",
		Long: "Serve the pool to AG-UI clients (CopilotKit, @ag-ui/client): POST / runs the default agent, " +
			"POST /agents/{name} a named agent or team, GET /agents lists them, GET /healthz. " +
			"The listening address is printed on stderr (use --addr 127.0.0.1:0 for a free port).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveAGUI(cmd, f, addr)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", defaultAGUIAddr, "address to listen on (host:port)")
	return cmd
}

func serveAGUI(cmd *cobra.Command, f poolFlags, addr string) error {
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	p, err := openPool(f, pool.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer p.Close()

	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "agui listening on http://%s\n", ln.Addr())
	return agui.New(p, agui.Options{Logger: logger}).Serve(ctx, ln)
}
