package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/durable"
	"github.com/agentpool/agentpool/pool"
)

func init() { extraCommands = append(extraCommands, newWorkerCmd) }

func newWorkerCmd() *cobra.Command {
	var f poolFlags
	cmd := &cobra.Command{
		Use:   "worker [flags]",
		Short: "Run the sessions of a pool whose execution engine is temporal",
		Long: "Run the workflows and activities of the pool's Temporal task queue (the manifest's execution block): " +
			"any number of workers, on any machines that share the pool's store. SIGTERM or SIGINT stops taking work and " +
			"lets what runs finish (up to 30 s), then hands the rest back to the other workers.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return workerMain(cmd, f) },
	}
	f.register(cmd)
	return cmd
}

// dialTemporal connects to the frontend of the manifest's execution block.
// With a tracer provider (tracing on), the client carries the SDK's
// OpenTelemetry interceptor (durable.TracingInterceptor), and so do the
// workers made from it: a run is one trace across processes.
func dialTemporal(x config.Execution, log *slog.Logger, tp trace.TracerProvider) (client.Client, error) {
	addr := x.ResolvedAddress(os.Getenv)
	if addr == "" {
		return nil, fmt.Errorf("execution: engine temporal needs an address (execution.address or %s)", config.EnvTemporalAddress)
	}
	opts := client.Options{HostPort: addr, Namespace: x.Namespace, Logger: newTemporalLogger(log)}
	tracing, err := durable.TracingInterceptor(tp)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	if tracing != nil {
		opts.Interceptors = []interceptor.ClientInterceptor{tracing}
	}
	c, err := client.Dial(opts)
	if err != nil {
		return nil, fmt.Errorf("temporal at %s: %w", addr, err)
	}
	return c, nil
}

// engineFor is the durable engine over p's nodes and store.
func engineFor(p *pool.Pool) *durable.Engine {
	return &durable.Engine{
		Activities: durable.Activities{Store: p.Store(), Lookup: p.Node, Runtime: p.Runtime(), Metrics: p.SessionMetrics()},
		Names:      p.NodeNames, Limits: p.Runtime().Limits(), TaskQueue: p.Manifest().Execution.TaskQueue,
	}
}

func workerMain(cmd *cobra.Command, f poolFlags) error {
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	f.worker = true
	p, tel, err := openPoolTelemetry(f, pool.Options{Logger: log})
	if err != nil {
		return err
	}
	defer shutdownTelemetry(tel, log) // last: flushes the spans of the worker's runs
	defer p.Close()
	x := p.Manifest().Execution
	if !x.Temporal() {
		return fmt.Errorf("the manifest's execution engine is %s: a worker runs pools with execution: {engine: temporal}", config.EngineInProcess)
	}
	c, err := dialTemporal(x, log, tel.TracerProvider())
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, x.TaskQueue, worker.Options{WorkerStopTimeout: 30 * time.Second})
	engineFor(p).Register(w)
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, stopSignals...)
	defer stop()
	stopped := make(chan any)
	go func() {
		<-ctx.Done()
		close(stopped)
	}()
	fmt.Fprintf(cmd.ErrOrStderr(), "agentpool worker: task queue %s on %s\n", x.TaskQueue, x.ResolvedAddress(os.Getenv))
	return w.Run(stopped)
}

// temporalLogger passes the SDK's warnings and errors to log.
type temporalLogger struct{ log *slog.Logger }

func newTemporalLogger(log *slog.Logger) temporalLogger { return temporalLogger{log: log} }

func (l temporalLogger) Debug(string, ...any)        {}
func (l temporalLogger) Info(string, ...any)         {}
func (l temporalLogger) Warn(msg string, kv ...any)  { l.log.Warn("temporal: "+msg, kv...) }
func (l temporalLogger) Error(msg string, kv ...any) { l.log.Error("temporal: "+msg, kv...) }
