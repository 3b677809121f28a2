package temporaltest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeFrontend serves the gRPC health service on loopback, as the
// frontend does, with Service's status NOT_SERVING until the test says.
func fakeFrontend(t *testing.T) (string, *health.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus(Service, healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-served })
	return ln.Addr().String(), hs
}

// WaitServing returns nil once the status is SERVING, whether it turns so
// before or after the Watch stream opened.
func TestWaitServing(t *testing.T) {
	addr, hs := fakeFrontend(t)
	done := make(chan error, 1)
	go func() { done <- WaitServing(context.Background(), addr, nil) }()
	hs.SetServingStatus(Service, healthpb.HealthCheckResponse_SERVING)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A server that is gone (exited closed) ends the wait with an error that
// says so, though nothing listens on addr.
func TestWaitServingExited(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused from here on
	exited := make(chan struct{})
	close(exited)
	err = WaitServing(context.Background(), addr, exited)
	if err == nil || !strings.Contains(err.Error(), "exited before it served") {
		t.Fatalf("WaitServing of a server that exited = %v", err)
	}
}

// A frontend that never serves holds the wait until ctx ends.
func TestWaitServingContext(t *testing.T) {
	addr, _ := fakeFrontend(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- WaitServing(ctx, addr, nil) }()
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "NOT_SERVING") && !strings.Contains(err.Error(), "UNKNOWN") {
		t.Fatalf("WaitServing after ctx ended = %v", err)
	}
}

// A server that exits before it serves (here a CLI that fails at once, as
// the dev server does when a port it was given is taken) is reported with
// its exit status and output, so StartDev can start it again and, at the
// last start, fail saying why.
func TestStartOnceReportsAnEarlyExit(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "temporal")
	script := "#!/bin/sh\necho 'listen tcp 127.0.0.1: bind: address already in use' >&2\nexit 3\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	addr, out, err := startOnce(t, bin)
	if err == nil || addr != "" {
		t.Fatalf("startOnce of a CLI that exits = %q, %v", addr, err)
	}
	if !strings.Contains(out, "exit status 3") || !strings.Contains(out, "address already in use") {
		t.Fatalf("startOnce output = %q, want the exit status and the CLI's stderr", out)
	}
}
