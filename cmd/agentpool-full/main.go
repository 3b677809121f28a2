// Command agentpool-full is agentpool with the Temporal engine (`worker`,
// manifests with execution: {engine: temporal}), the OpenTelemetry
// exporters and the PostgreSQL session store: the same commands (cli) with the extensions the
// light binary leaves out to start fast. agentpool runs it in its own place
// when a command needs them; it can also be run directly.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/agentpool/agentpool/cli"
	"github.com/agentpool/agentpool/cli/temporalcli"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
	"github.com/agentpool/agentpool/tracing/otelwire"
)

func main() { os.Exit(cli.Main(extensions())) }

// extensions are the Temporal engine, the OpenTelemetry exporters and
// the PostgreSQL store.
func extensions() cli.Extensions {
	return cli.Extensions{Temporal: temporalcli.Temporal{}, Telemetry: telemetry, Postgres: openPostgres}
}

// openPostgres is postgres.Open as a cli.PostgresOpener.
func openPostgres(ctx context.Context, url string, log *slog.Logger) (session.Store, error) {
	return postgres.Open(ctx, url, postgres.Options{Logger: log})
}

// telemetry is otelwire.Setup as a cli.Telemetry: nil (not a nil
// *Providers in an interface) when nothing is exported.
func telemetry(ctx context.Context, obs config.Observability) (cli.Telemetry, error) {
	p, err := otelwire.Setup(ctx, obs)
	if p == nil {
		return nil, err
	}
	return p, err
}
