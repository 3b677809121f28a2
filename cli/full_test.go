package cli

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"syscall"

	"github.com/agentpool/agentpool/cli/temporalcli"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
	"github.com/agentpool/agentpool/tracing/otelwire"
)

// fullTestExtensions are cmd/agentpool-full's: the Temporal engine, the
// OpenTelemetry exporters and the PostgreSQL store.
func fullTestExtensions() Extensions {
	return Extensions{Temporal: temporalcli.Temporal{}, Telemetry: func(ctx context.Context, obs config.Observability) (Telemetry, error) {
		p, err := otelwire.Setup(ctx, obs)
		if p == nil {
			return nil, err
		}
		return p, err
	}, Postgres: func(ctx context.Context, url string, log *slog.Logger) (session.Store, error) {
		return postgres.Open(ctx, url, postgres.Options{Logger: log})
	}}
}

// lookupEnv, set to "real" in a light CLI process, makes it look for
// agentpool-full as cmd/agentpool-light does (lookFull: next to the executable,
// else on PATH) instead of taking this test binary.
const lookupEnv = "AGENTPOOL_TEST_FULL_LOOKUP"

// lightTestExtensions are cmd/agentpool-light's (none), with this test binary as
// agentpool-full: it execs itself with cliEnv=full.
func lightTestExtensions() Extensions {
	find := os.Executable
	if os.Getenv(lookupEnv) == "real" {
		find = lookFull
	}
	return Extensions{
		findFull: find,
		execFull: func(path string, argv, env []string) error {
			return syscall.Exec(path, argv, withEnv(env, cliEnv, "full"))
		},
	}
}

// withEnv is env with k set to v (replaced where env has it).
func withEnv(env []string, k, v string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}
