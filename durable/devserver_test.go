package durable

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/temporaltest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// startDevServer starts a Temporal dev server on loopback for the test
// and returns its address.
func startDevServer(t testing.TB) string {
	t.Helper()
	return temporaltest.StartDev(t)
}

// quietLogger drops the SDK's log.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(msg string, kv ...any) {
	// A worker process (TestMain, before flag parsing) has no -test.v:
	// testing.Verbose would panic there.
	if flag.Parsed() && testing.Verbose() {
		fmt.Fprintln(os.Stderr, append([]any{"temporal:", msg}, kv...)...)
	}
}

// dialTest dials the dev server at addr as the tests' client, closed when
// the test ends.
func dialTest(t testing.TB, addr string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// startLocalWorker starts a worker in the test's process on queue that
// runs p's engine, its store wrapped by wrap when it is given; the worker
// stops when the test ends.
func startLocalWorker(t testing.TB, c client.Client, queue string, p *pool.Pool, wrap func(session.Store) session.Store) {
	t.Helper()
	w := worker.New(c, queue, worker.Options{WorkerStopTimeout: 5 * time.Second})
	e := engineFor(p)
	if wrap != nil {
		e.Store = wrap(e.Store)
	}
	e.TaskQueue = queue
	e.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

// rootResult is what RunRoot returned.
type rootResult struct {
	root string
	out  SessionOutput
	err  error
}

// runRootAsync runs RunRoot in a goroutine of its own, for a test that
// acts on the run while it runs; the result comes on the channel.
func runRootAsync(ctx context.Context, c client.Client, st session.Store, req RootRequest, sink event.Sink) <-chan rootResult {
	done := make(chan rootResult, 1)
	go func() {
		root, out, err := RunRoot(ctx, c, st, req, sink)
		done <- rootResult{root, out, err}
	}()
	return done
}
