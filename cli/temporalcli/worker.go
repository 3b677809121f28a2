package temporalcli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/durable"
	"github.com/agentpool/agentpool/pool"
)

// Temporal is the Temporal engine of agentpool-full's command line (it
// implements cli.Temporal); the zero value is ready.
type Temporal struct{}

// dial connects to the frontend of the manifest's execution block. With a
// tracer provider (tracing on), the client carries the SDK's OpenTelemetry
// interceptor (durable.TracingInterceptor), and so do the workers made from
// it: a run is one trace across processes.
func dial(x config.Execution, log *slog.Logger, tp trace.TracerProvider) (client.Client, error) {
	addr := x.ResolvedAddress(os.Getenv)
	if addr == "" {
		return nil, fmt.Errorf("execution: engine temporal needs an address (execution.address or %s)", config.EnvTemporalAddress)
	}
	opts := client.Options{HostPort: addr, Namespace: x.Namespace, Logger: NewLogger(log)}
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

// Work implements cli.Temporal: it runs the workflows and activities of
// p's task queue until ctx ends, then stops taking work and lets what runs
// finish (up to 30 s), handing the rest back to the other workers. Once
// connected it writes "agentpool worker: task queue Q on ADDR" on stderr.
func (Temporal) Work(ctx context.Context, p *pool.Pool, log *slog.Logger, tp trace.TracerProvider, stderr io.Writer) error {
	x := p.Manifest().Execution
	c, err := dial(x, log, tp)
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, x.TaskQueue, worker.Options{WorkerStopTimeout: 30 * time.Second})
	engineFor(p).Register(w)
	stopped := make(chan any)
	go func() {
		<-ctx.Done()
		close(stopped)
	}()
	fmt.Fprintf(stderr, "agentpool worker: task queue %s on %s\n", x.TaskQueue, x.ResolvedAddress(os.Getenv))
	return w.Run(stopped)
}

// Logger passes the Temporal SDK's warnings and errors to an slog.Logger
// (and drops its debug and info lines).
type Logger struct{ log *slog.Logger }

// NewLogger returns the SDK logger that writes to log.
func NewLogger(log *slog.Logger) Logger { return Logger{log: log} }

func (l Logger) Debug(string, ...any)        {}
func (l Logger) Info(string, ...any)         {}
func (l Logger) Warn(msg string, kv ...any)  { l.log.Warn("temporal: "+msg, kv...) }
func (l Logger) Error(msg string, kv ...any) { l.log.Error("temporal: "+msg, kv...) }
