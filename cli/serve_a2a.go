package cli

import (
	"context"
	"log/slog"
	"net"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/internal/binaries"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/a2a"
	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/spf13/cobra"
)

func init() {
	serveCommands = append(serveCommands, newServeA2ACmd)
}

// defaultA2AAddr is loopback only, beside AG-UI's 8765.
const defaultA2AAddr = "127.0.0.1:8766"

func newServeA2ACmd(ext Extensions) *cobra.Command {
	var (
		f       poolFlags
		h       httpFlags
		baseURL string
	)
	cmd := &cobra.Command{
		Use:   "a2a",
		Short: "Serve the pool's agents over A2A (Agent2Agent: JSON-RPC, server-sent events)",
		Long: "Serve every agent and team of the pool as an A2A agent (protocol 0.3): POST /agents/{name} takes " +
			"message/send, message/stream, tasks/get and tasks/cancel, and its agent card is at " +
			"/agents/{name}/.well-known/agent-card.json; the default agent is also at / with its card at " +
			"/.well-known/agent-card.json. GET /agents lists the cards. Delegations inside a task show as working " +
			"status updates and as artifacts named after the member (docs/a2a.md). A tool call that needs approval gets " +
			"the manifest's unattended answer (no one is asked). The listening address is printed on stderr " +
			"(use --addr 127.0.0.1:0 for a free port). It listens on loopback; any other address needs a bearer token " +
			"(--token or $" + httpsec.EnvToken + "), which every request but the agent cards must then carry.",
		Example: "  agentpool serve a2a -c examples/nested.yaml\n  # another pool's member: {type: a2a, url: http://127.0.0.1:8766/agents/NAME}",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveHTTP(cmd, f, h, "a2a", func(ctx context.Context, p *pool.Pool, ln net.Listener, logger *slog.Logger, _ *approval.Broker) error {
				srv := a2a.New(p, a2a.Options{Logger: logger, Token: h.tokenValue(), CORSOrigins: h.cors, MaxConns: h.maxConns,
					BaseURL: baseURL, Version: binaries.Version})
				return srv.Serve(ctx, ln)
			})
		},
	}
	f.register(cmd, ext)
	h.register(cmd, defaultA2AAddr)
	cmd.Flags().StringVar(&baseURL, "base-url", "", "the server's address as clients reach it (https://host), for the agent cards' url; default: that of each request")
	return cmd
}
