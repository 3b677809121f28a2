package durable

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/internal/temporaltest"
)

// EnvTemporalBin names the Temporal CLI (make test-deps builds bin/temporal).
const EnvTemporalBin = "AGENTPOOL_TEMPORAL_BIN"

// temporalBin returns the CLI's path, skipping the test without one (a
// failure under CI=true, where make test-deps provides it).
func temporalBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(EnvTemporalBin)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set (make test-deps builds bin/temporal)", EnvTemporalBin)
		}
		t.Skipf("%s is not set: no Temporal dev server (make test-deps builds bin/temporal)", EnvTemporalBin)
	}
	return bin
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startDevServer starts a Temporal dev server on loopback, stopped (with
// its process group) when the test ends, and returns its address.
func startDevServer(t testing.TB) string {
	t.Helper()
	bin := temporalBin(t)
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(port), "--http-port", strconv.Itoa(freePort(t)), "--metrics-port", strconv.Itoa(freePort(t)),
		"--db-filename", filepath.Join(t.TempDir(), "temporal.db"), "--log-level", "error")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // no orphan if the test binary dies (a timeout panic skips cleanups)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := temporaltest.WaitServing(ctx, addr, exited); err != nil {
		select {
		case <-exited:
			t.Fatalf("temporal dev server exited: %v", waitErr)
		default:
		}
		t.Fatalf("temporal dev server at %s not ready: %v", addr, err)
	}
	return addr
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
