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
	"github.com/agentpool/agentpool/server/web"
	"github.com/spf13/cobra"
)

func init() {
	serveCommands = append(serveCommands, newServeWebCmd)
}

// defaultWebAddr is a loopback port of its own, so that the web view and
// an OpenCode server on 4096 can run side by side.
const defaultWebAddr = "127.0.0.1:4097"

func newServeWebCmd(ext Extensions) *cobra.Command {
	var (
		f poolFlags
		h httpFlags
	)
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Serve a web view of the session tree (and the OpenCode API it runs on)",
		Long: "Serve the web view at /: the live tree of every session and its child sessions, the transcript " +
			"of any session, a timeline of a run's sessions, a prompt box to start a run on any agent or team, " +
			"a stop button, and the tool calls waiting for approval (Write, Edit and Bash ask by default): the " +
			"waiting session is marked in the tree and its transcript offers Allow once, Allow always and Reject. The page is embedded in the binary and loads nothing from the network. " +
			"It runs on the OpenCode server API, served on the same address with the same rules as " +
			"`agentpool serve opencode` (GET /doc describes it). The listening address is printed on stderr " +
			"(use --addr 127.0.0.1:0 for a free port). " +
			"It listens on loopback; any other address needs a bearer token (--token or $" + httpsec.EnvToken + "): " +
			"the page then asks for it and sends it with every API call. No CORS unless --cors-origin is given.",
		Example: "  agentpool serve web -c examples/nested.yaml\n  # stderr: web listening on http://127.0.0.1:4097 (open it in a browser)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveHTTP(cmd, f, h, "web", func(ctx context.Context, p *pool.Pool, ln net.Listener, logger *slog.Logger, approvals *approval.Broker) error {
				srv := opencode.New(p, opencode.Options{Logger: logger, Version: binaries.Version, Token: h.tokenValue(),
					CORSOrigins: h.cors, MaxConns: h.maxConns, UI: web.New(), Approvals: approvals})
				defer reopenApprovals(ctx, p, logger, h.waitingScan)() // attached: show what waits
				return srv.Serve(ctx, ln)
			})
		},
	}
	f.register(cmd, ext)
	h.register(cmd, defaultWebAddr)
	return cmd
}
