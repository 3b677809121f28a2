package durable

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/agentpool/agentpool/internal/temporaltest"
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
