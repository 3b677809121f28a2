package aguiagent_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/agui"
)

// serveEnv, when set, makes the test binary the AG-UI server of
// remoteYAML on that address (the startup_command of TestStartupCommand).
const serveEnv = "AGUIAGENT_TEST_SERVE"

func TestMain(m *testing.M) {
	if addr := os.Getenv(serveEnv); addr != "" {
		fmt.Fprintln(os.Stderr, serveRemote(addr))
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// serveRemote serves remoteYAML's pool over AG-UI on addr until killed.
func serveRemote(addr string) error {
	reg := pool.NewRegistry().AddModel("blocking", func(config.ModelSpec) (model.Model, error) { return blocking{}, nil })
	m, err := config.ParseWith("agentpool.yaml", []byte(remoteYAML), batteries.ConfigOptions(reg))
	if err != nil {
		return err
	}
	p, err := pool.New(m, pool.Options{Registry: reg})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return http.Serve(ln, agui.New(p, agui.Options{}))
}

// TestStartupCommand: an agent with startup_command starts its server at
// the first delegation, waits until it accepts connections, and the
// pool's Close ends it.
func TestStartupCommand(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, opt)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf("agents:\n  managed:\n    type: agui\n    endpoint: http://%s/agents/planner\n    startup_command: \"%s=%s exec %s -test.run=^$\"\n    startup_delay: 3.0\n", addr, serveEnv, addr, exe)
	m, err := config.ParseWith("agentpool.yaml", []byte(src), batteries.ConfigOptions(batteries.Registry()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Registry: batteries.Registry(), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, prompt := range []string{"Plan.", "Plan again."} { // the second reuses the server
		res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: prompt}, event.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if res.Result.StopReason != event.StopCompleted || res.Result.Output != "Plan complete." {
			t.Fatalf("run: %s %q %v", res.Result.StopReason, res.Result.Output, res.Result.Err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the server outlived the pool")
	}
}

// TestStartupCommandFails: a server that exits before it accepts
// connections fails the delegation with what it wrote.
func TestStartupCommandFails(t *testing.T) {
	src := "agents:\n  managed:\n    type: agui\n    endpoint: http://127.0.0.1:1/agents/planner\n    startup_command: \"echo no such server >&2; exit 3\"\n"
	m, err := config.ParseWith("agentpool.yaml", []byte(src), batteries.ConfigOptions(batteries.Registry()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Registry: batteries.Registry(), Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "Plan."}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopError || res.Result.Err == nil || !strings.Contains(res.Result.Err.Error(), "no such server") {
		t.Errorf("run: %s %v, want an error quoting the server's stderr", res.Result.StopReason, res.Result.Err)
	}
}
