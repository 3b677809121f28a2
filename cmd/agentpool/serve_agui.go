package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/agui"
	"github.com/agentpool/agentpool/server/httpsec"
)

func init() {
	serveCommands = append(serveCommands, newServeAGUICmd)
}

// defaultAGUIAddr is loopback only: other addresses need a token.
const defaultAGUIAddr = "127.0.0.1:8765"

func newServeAGUICmd() *cobra.Command {
	var (
		f poolFlags
		h httpFlags
	)
	cmd := &cobra.Command{
		Use:   "agui",
		Short: "Serve the pool over AG-UI (HTTP POST, server-sent events)",
		Long: "Serve the pool to AG-UI clients (CopilotKit, @ag-ui/client): POST / runs the default agent, " +
			"POST /agents/{name} a named agent or team, GET /agents lists them, GET /healthz. " +
			"The listening address is printed on stderr (use --addr 127.0.0.1:0 for a free port). " +
			"It listens on loopback; any other address needs a bearer token (--token or $" + httpsec.EnvToken + "), " +
			"which every request must then carry. No CORS unless --cors-origin is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveAGUI(cmd, f, h)
		},
	}
	f.register(cmd)
	h.register(cmd, defaultAGUIAddr)
	return cmd
}

func serveAGUI(cmd *cobra.Command, f poolFlags, h httpFlags) error {
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The bind rule first: refuse before opening anything.
	if err := httpsec.CheckBind(h.addr, h.tokenValue()); err != nil {
		return err
	}
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

	ln, err := h.listen()
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "agui listening on http://%s\n", ln.Addr())
	return agui.New(p, agui.Options{Logger: logger, Token: h.tokenValue(), CORSOrigins: h.cors}).Serve(ctx, ln)
}
