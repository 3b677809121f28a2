package acpagent_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/external/acpagent/mcprelay"
)

// exampleAgent is the SDK's example agent (github.com/coder/acp-go-sdk's
// example/agent, built from the module cache by TestMain): a real ACP
// agent that streams text, announces two tool calls and asks permission
// for the second.
var exampleAgent string

// mcpAgent is testdata/mcpagent, built by TestMain: a test agent that
// calls the tools served to it over MCP, as its prompt says.
var mcpAgent string

// relayArg makes this test binary the stdio MCP relay (Config.Relay).
const relayArg = "mcp-relay"

// Runs start agent processes and goroutines that read them: none may
// outlive the tests.
func TestMain(m *testing.M) {
	if os.Getenv(testAgentEnv) != "" {
		os.Exit(runTestAgent())
	}
	if len(os.Args) == 2 && os.Args[1] == relayArg {
		// The relay an agent without MCP over HTTP starts, as
		// `agentpool mcp-relay` runs it.
		if err := mcprelay.Run(context.Background(), mcprelay.Options{URL: os.Getenv(mcprelay.EnvURL), ParentPID: os.Getppid()}); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "acpagent-test-")
	if err != nil {
		panic(err)
	}
	exampleAgent = filepath.Join(dir, "example-agent")
	mcpAgent = filepath.Join(dir, "mcpagent")
	for bin, pkg := range map[string]string{exampleAgent: "github.com/coder/acp-go-sdk/example/agent", mcpAgent: "./testdata/mcpagent"} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			os.RemoveAll(dir)
			panic("build " + pkg + ": " + err.Error())
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
