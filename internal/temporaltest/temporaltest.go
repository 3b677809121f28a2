package temporaltest

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Service is the name the frontend's gRPC health service reports on (the
// one the SDK's Client.CheckHealth asks about).
const Service = "temporal.api.workflowservice.v1.WorkflowService"

// WaitServing returns nil once the Temporal frontend at addr (host:port)
// reports Service SERVING. It opens one health Watch stream, which waits
// for the connection (WaitForReady) and then for the server's status
// updates: no poll of its own. The connection's reconnects after a refused
// dial are gRPC's, with a short backoff (a server that is starting is
// listening within seconds). It returns an error when exited is closed
// (the server's process is gone) or ctx ends first.
func WaitServing(ctx context.Context, addr string, exited <-chan struct{}) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	gone := make(chan struct{})
	go func() {
		select {
		case <-exited:
			close(gone)
			cancel()
		case <-stop:
		}
	}()
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.5, Jitter: 0.2, MaxDelay: 250 * time.Millisecond},
			MinConnectTimeout: 5 * time.Second,
		}))
	if err != nil {
		return fmt.Errorf("temporaltest: %s: %w", addr, err)
	}
	defer conn.Close()
	stream, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{Service: Service}, grpc.WaitForReady(true))
	last := healthpb.HealthCheckResponse_UNKNOWN
	for err == nil {
		var res *healthpb.HealthCheckResponse
		if res, err = stream.Recv(); err == nil {
			if last = res.GetStatus(); last == healthpb.HealthCheckResponse_SERVING {
				return nil
			}
		}
	}
	select {
	case <-gone:
		return fmt.Errorf("temporaltest: the server at %s exited before it served (last status %s)", addr, last)
	default:
	}
	return fmt.Errorf("temporaltest: %s does not serve (last status %s): %w", addr, last, err)
}
