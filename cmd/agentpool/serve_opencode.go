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
	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/agentpool/agentpool/server/opencode"
)

func init() {
	serveCommands = append(serveCommands, newServeOpenCodeCmd)
}

// defaultOpenCodeAddr is OpenCode's own default port, on loopback only:
// other addresses need a token.
const defaultOpenCodeAddr = "127.0.0.1:4096"

func newServeOpenCodeCmd() *cobra.Command {
	var (
		f poolFlags
		h httpFlags
	)
	cmd := &cobra.Command{
		Use:   "opencode",
		Short: "Serve the pool over the OpenCode server API (HTTP, server-sent events)",
		Long: "Serve the pool to OpenCode clients (the OpenCode TUI, @opencode-ai/sdk): sessions, messages, " +
			"prompts, abort and the event stream of the session tree, with subagents as child sessions. " +
			"GET /doc describes every route. The listening address is printed on stderr " +
			"(use --addr 127.0.0.1:0 for a free port). " +
			"It listens on loopback; any other address needs a bearer token (--token or $" + httpsec.EnvToken + "), " +
			"which every request must then carry. No CORS unless --cors-origin is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveOpenCode(cmd, f, h)
		},
	}
	f.register(cmd)
	h.register(cmd, defaultOpenCodeAddr)
	return cmd
}

func serveOpenCode(cmd *cobra.Command, f poolFlags, h httpFlags) error {
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
	srv := opencode.New(p, opencode.Options{Logger: logger, Version: version, Token: h.tokenValue(), CORSOrigins: h.cors})
	fmt.Fprintf(cmd.ErrOrStderr(), "opencode listening on http://%s\n", ln.Addr())
	return srv.Serve(ctx, ln)
}
