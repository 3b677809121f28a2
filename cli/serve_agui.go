package cli

import (
	"context"
	"log/slog"
	"net"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/agui"
	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/spf13/cobra"
)

func init() {
	serveCommands = append(serveCommands, newServeAGUICmd)
}

// defaultAGUIAddr is loopback only: other addresses need a token.
const defaultAGUIAddr = "127.0.0.1:8765"

func newServeAGUICmd(ext Extensions) *cobra.Command {
	var (
		f poolFlags
		h httpFlags
	)
	cmd := &cobra.Command{
		Use:   "agui",
		Short: "Serve the pool over AG-UI (HTTP POST, server-sent events)",
		Long: "Serve the pool to AG-UI clients (CopilotKit, @ag-ui/client): POST / runs the default agent, " +
			"POST /agents/{name} a named agent or team, GET /agents lists them, GET /healthz. " +
			"A tool call that needs approval is streamed as a CUSTOM approval_asked event and answered with " +
			"POST /approvals/{id} {\"reply\": \"allow_once\"}; GET /approvals lists the pending ones (docs/agui.md). " +
			"The listening address is printed on stderr (use --addr 127.0.0.1:0 for a free port). " +
			"It listens on loopback; any other address needs a bearer token (--token or $" + httpsec.EnvToken + "), " +
			"which every request must then carry. No CORS unless --cors-origin is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveAGUI(cmd, f, h)
		},
	}
	f.register(cmd, ext)
	h.register(cmd, defaultAGUIAddr)
	return cmd
}

func serveAGUI(cmd *cobra.Command, f poolFlags, h httpFlags) error {
	return serveHTTP(cmd, f, h, "agui", func(ctx context.Context, p *pool.Pool, ln net.Listener, logger *slog.Logger, approvals *approval.Broker) error {
		srv := agui.New(p, agui.Options{Logger: logger, Token: h.tokenValue(), CORSOrigins: h.cors, MaxConns: h.maxConns,
			Approvals: approvals})
		defer reopenApprovals(ctx, p, logger, h.waitingScan)() // attached: GET /approvals lists what waits
		return srv.Serve(ctx, ln)
	})
}
