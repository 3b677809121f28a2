package temporaltest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/internal/tailbuf"
)

// EnvBin names the Temporal CLI (make test-deps builds bin/temporal).
const EnvBin = "AGENTPOOL_TEMPORAL_BIN"

// attempts bounds the starts StartDev tries. The ports come from a listen
// and close on port 0, so another test can take one before the server binds
// it; the server then exits at once, and a start on fresh ports is the fix.
const attempts = 3

// Bin returns the Temporal CLI's path, skipping the test without one (a
// failure under CI=true, where make test-deps provides it).
func Bin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(EnvBin)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set (make test-deps builds bin/temporal)", EnvBin)
		}
		t.Skipf("%s is not set: no Temporal dev server (make test-deps builds bin/temporal)", EnvBin)
	}
	return bin
}

// StartDev starts a Temporal dev server on loopback, killed with its
// process group when the test ends, and returns its frontend's address
// once it serves. A server that exits before it serves is started again on
// fresh ports (at most attempts times); the test fails with the last
// server's exit status and the end of its output.
func StartDev(t testing.TB) string {
	t.Helper()
	bin := Bin(t)
	for i := 1; ; i++ {
		addr, out, err := startOnce(t, bin)
		if err == nil {
			return addr
		}
		if out == "" || i == attempts {
			t.Fatalf("temporal dev server not ready (start %d of %d): %v\n%s", i, attempts, err, out)
		}
		t.Logf("temporal dev server exited before it served (start %d of %d), starting again: %v\n%s", i, attempts, err, out)
	}
}

// startOnce starts one server. out is the end of its output when it
// exited before serving ("" when it is still running but never served).
func startOnce(t testing.TB, bin string) (addr, out string, err error) {
	t.Helper()
	port := freePort(t)
	addr = net.JoinHostPort("127.0.0.1", port)
	log := tailbuf.New(8 << 10)
	cmd := exec.Command(bin, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", port, "--http-port", freePort(t), "--metrics-port", freePort(t),
		"--log-level", "error",
		"--dynamic-config-value", "system.enableActivityEagerExecution=true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // no orphan if the test binary dies (a timeout panic skips cleanups)
	cmd.Stdout, cmd.Stderr = log, log
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
	if err := WaitServing(ctx, addr, exited); err != nil {
		select {
		case <-exited:
			return "", "exit: " + errString(waitErr) + "\n" + log.String(), err
		default:
			return "", "", err
		}
	}
	return addr, "", nil
}

func errString(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
