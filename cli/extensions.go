package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/internal/binaries"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tracing"
)

// Extensions are the parts of the command line that only agentpool-full
// links: the Temporal engine (cli/temporalcli), the OpenTelemetry SDK with
// its exporters (tracing/otelwire) and the PostgreSQL store
// (session/postgres; pgx alone is ~7 % of the light binary's cold build,
// BENCHMARKS.md). agentpool-light, the light one, passes the zero value to
// Main; a command that needs a missing part replaces the process with
// agentpool-full, found next to the running executable, else on PATH, with
// the same arguments and environment, before it does anything (see
// needsFull for exactly when). Without agentpool-full the command fails
// with an error that says how to get it.
type Extensions struct {
	// Temporal runs pools whose execution engine is temporal; nil: this
	// binary does not have it.
	Temporal Temporal
	// Telemetry makes the providers that the OTEL_* environment and the
	// manifest's observability block ask for, nil when they ask for none;
	// nil: this binary has no exporters.
	Telemetry func(ctx context.Context, obs config.Observability) (Telemetry, error)
	// Postgres opens a PostgreSQL session store (session/postgres.Open);
	// nil: this binary has none.
	Postgres PostgresOpener

	// findFull and execFull find and start agentpool-full; tests replace
	// them (zero: lookFull and syscall.Exec).
	findFull func() (string, error)
	execFull func(path string, argv, env []string) error
	// execed: this process was started by agentpool-light for a command
	// that needs agentpool-full (binaries.EnvFromLight).
	execed bool
}

// Temporal is the Temporal engine of agentpool-full
// (cli/temporalcli.Temporal).
type Temporal interface {
	// Engine dials the frontend of x and returns the engine that submits
	// the pool's root runs to x's task queue; it is an io.Closer (the pool
	// closes it).
	// approvals, when set, is the broker the command's front ends attach
	// to: the engine shows the runs' approval requests there.
	Engine(x config.Execution, st session.Store, log *slog.Logger, tp trace.TracerProvider, approvals *approval.Broker) (pool.Engine, error)
	// Work runs the workflows and activities of p's task queue until ctx
	// ends (agentpool worker), saying on stderr when it is connected.
	Work(ctx context.Context, p *pool.Pool, log *slog.Logger, tp trace.TracerProvider, stderr io.Writer) error
}

// PostgresOpener opens the PostgreSQL database at url as a session store,
// logging to log.
type PostgresOpener func(ctx context.Context, url string, log *slog.Logger) (session.Store, error)

// Telemetry is what the command line needs of the OpenTelemetry providers
// (tracing/otelwire.Providers): their tracer and meter providers (nil:
// that signal is not exported) and a Shutdown that flushes them.
type Telemetry interface {
	TracerProvider() trace.TracerProvider
	MeterProvider() metric.MeterProvider
	Shutdown(ctx context.Context) error
}

// Command annotations: what a command needs of Extensions.
const (
	annotationNeeds = "agentpool/needs"
	// needsManifest: a command that builds a pool; its manifest and the
	// environment decide (needsFull).
	needsManifest = "manifest"
	// needsTemporal: the command is the Temporal engine (worker).
	needsTemporal = "temporal"
	// needsStore: a command that opens the session store (sessions *):
	// its --db, else its manifest's storage, decides.
	needsStore = "store"
)

// errNoTemporal is what a command gets that reaches the Temporal engine in
// a binary without it; Main's exec to agentpool-full comes first, so it
// means a command that lacks its annotation.
var errNoTemporal = errors.New("this agentpool binary has no Temporal engine: run agentpool-full")

// noTemporal stands for the engine in the light binary.
type noTemporal struct{}

func (noTemporal) Engine(config.Execution, session.Store, *slog.Logger, trace.TracerProvider, *approval.Broker) (pool.Engine, error) {
	return nil, errNoTemporal
}

func (noTemporal) Work(context.Context, *pool.Pool, *slog.Logger, trace.TracerProvider, io.Writer) error {
	return errNoTemporal
}

func (e Extensions) temporal() Temporal {
	if e.Temporal == nil {
		return noTemporal{}
	}
	return e.Temporal
}

// telemetry makes the providers obs and the environment ask for; nil when
// they ask for none or this binary has no exporters (then Main's check has
// found that none are asked for).
func (e Extensions) telemetry(obs config.Observability) (Telemetry, error) {
	if e.Telemetry == nil {
		return nil, nil
	}
	return e.Telemetry(context.Background(), obs)
}

// tracerProvider is tel's tracer provider, nil without telemetry.
func tracerProvider(tel Telemetry) trace.TracerProvider {
	if tel == nil {
		return nil
	}
	return tel.TracerProvider()
}

// needsFull says why a command needs a part that e lacks ("" when e can run
// it): needs is the command's annotation, db its --db flag, m its manifest
// (nil when it could not be loaded: the command reports that itself),
// lookup reads the environment. The rule, for the light binary (e zero):
//
//   - worker: always (it is the Temporal engine);
//   - a command that opens the session store (run, serve *, replay,
//     sessions *): when its database (--db, else the manifest's storage)
//     is a PostgreSQL URL;
//   - a command that builds a pool (run, serve *): when the manifest's
//     execution engine is temporal, or when the OTEL_* environment or the
//     manifest's observability block asks for telemetry export
//     (tracing.Export, the rule otelwire.Setup applies);
//   - anything else (version, validate): never.
func needsFull(e Extensions, needs, db string, m *config.Manifest, lookup func(string) (string, bool)) string {
	if needs != "" && needs != needsTemporal && e.Postgres == nil && isPostgresURL(storeURL(db, m)) {
		return "the session database is PostgreSQL"
	}
	switch needs {
	case needsTemporal:
		if e.Temporal == nil {
			return "agentpool worker runs the Temporal engine"
		}
	case needsManifest:
		if m == nil {
			return ""
		}
		if e.Temporal == nil && m.Execution.Temporal() {
			return "the manifest's execution engine is temporal"
		}
		if e.Telemetry == nil {
			if t, mt := tracing.Export(m.Observability, lookup); t || mt {
				return "telemetry export is asked for (OTEL_* environment or the manifest's observability block)"
			}
		}
	}
	return ""
}

// execFullIfNeeded replaces the process with agentpool-full when cmd needs
// it (needsFull); it returns only when cmd can run here, or with the error
// that says why agentpool-full could not be started.
func (e Extensions) execFullIfNeeded(cmd *cobra.Command) error {
	needs := cmd.Annotations[annotationNeeds]
	if needs == "" || (e.Temporal != nil && e.Telemetry != nil && e.Postgres != nil) {
		return nil
	}
	flag := func(name string) string {
		if fl := cmd.Flags().Lookup(name); fl != nil {
			return fl.Value.String()
		}
		return ""
	}
	db := flag("db")
	var m *config.Manifest
	if needs != needsTemporal && (needs != needsStore || db == "") {
		m, _ = loadManifest(flag("config")) // an error: the command reports it
	}
	reason := needsFull(e, needs, db, m, os.LookupEnv)
	if reason == "" {
		return nil
	}
	return e.runFull(reason)
}

// runFull execs agentpool-full with this process's arguments.
func (e Extensions) runFull(reason string) error {
	find, execve := e.findFull, e.execFull
	if find == nil {
		find = lookFull
	}
	if execve == nil {
		execve = syscall.Exec
	}
	path, err := find()
	if err != nil {
		return fmt.Errorf("%s, which needs %s (agentpool with the Temporal engine, the OpenTelemetry exporters and the PostgreSQL store): %v; "+
			"build it with `make build` (bin/%s) or `go install github.com/agentpool/agentpool/cmd/%s@latest`, "+
			"and put it next to agentpool or on PATH (from a checkout, `go run ./cmd/%s` runs it in place of `go run ./cmd/%s`)",
			reason, binaries.Full, err, binaries.Full, binaries.Full, binaries.Full, binaries.Light)
	}
	if e.execed {
		return fmt.Errorf("%s, which needs %s, but %s, started for it, is not the full binary (rebuild it with `make build`)", reason, binaries.Full, path)
	}
	argv := append([]string{path}, os.Args[1:]...)
	env := append(os.Environ(), binaries.EnvFromLight+"=1")
	return fmt.Errorf("%s: starting %s: %w", reason, path, execve(path, argv, env))
}

// lookFull finds agentpool-full: next to the running executable (symbolic
// links resolved, so a link to an installed agentpool finds the
// agentpool-full installed with it), else on PATH.
func lookFull() (string, error) { return binaries.Find(binaries.Full) }
