package cli

import (
	"context"
	"log/slog"
	"net"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/internal/binaries"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/agentpool/agentpool/server/opencode"
	"github.com/spf13/cobra"
)

func init() {
	serveCommands = append(serveCommands, newServeOpenCodeCmd)
}

// defaultOpenCodeAddr is OpenCode's own default port, on loopback only:
// other addresses need a token.
const defaultOpenCodeAddr = "127.0.0.1:4096"

func newServeOpenCodeCmd(ext Extensions) *cobra.Command {
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
	f.register(cmd, ext)
	h.register(cmd, defaultOpenCodeAddr)
	return cmd
}

func serveOpenCode(cmd *cobra.Command, f poolFlags, h httpFlags) error {
	return serveHTTP(cmd, f, h, "opencode", func(ctx context.Context, p *pool.Pool, ln net.Listener, logger *slog.Logger, approvals *approval.Broker) error {
		srv := opencode.New(p, opencode.Options{Logger: logger, Version: binaries.Version, Token: h.tokenValue(), CORSOrigins: h.cors, MaxConns: h.maxConns, Approvals: approvals})
		defer reopenApprovals(ctx, p, logger, h.waitingScan)() // attached: show what waits
		return srv.Serve(ctx, ln)
	})
}
