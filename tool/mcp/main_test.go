package mcp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
)

// The test binary doubles as a stdio MCP server (and as a long sleeper
// such a server can leave behind) when helperEnv is set.
const (
	helperEnv     = "AGENTPOOL_MCP_TEST_HELPER" // "server" or "sleep"
	helperModeEnv = "AGENTPOOL_MCP_TEST_MODE"   // "", "fail", "fail-unless", "hang-start", "garbage-start"
	helperFileEnv = "AGENTPOOL_MCP_TEST_FILE"   // marker file of fail-unless and crash_once
	helperPIDsEnv = "AGENTPOOL_MCP_TEST_PIDS"   // file each helper process appends its pid to
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "server":
		os.Exit(runHelperServer())
	case "sleep":
		recordPID()
		hang()
	}
	stopGrace = 300 * time.Millisecond
	// As under the CLI, the test process is a subreaper: what a server
	// leaves behind is reparented to it, killed with the server's tree and
	// reaped.
	proctreetest.VerifyTestMain(m)
}

// hang blocks until the process is killed: it reads a pipe whose writer
// it holds open, so no byte and no EOF ever come (a helper that must hang
// is the behaviour under test, and no sleep of a guessed length).
func hang() {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	defer w.Close()
	r.Read(make([]byte, 1))
	panic("hang: read a pipe nobody writes")
}

func recordPID() {
	if path := os.Getenv(helperPIDsEnv); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	}
}

type textArgs struct {
	Text string `json:"text,omitempty"`
}

// runHelperServer serves test tools over stdio.
func runHelperServer() int {
	recordPID()
	marker := os.Getenv(helperFileEnv)
	switch os.Getenv(helperModeEnv) {
	case "fail":
		fmt.Fprintln(os.Stderr, "helper: bad config, giving up")
		return 2
	case "hang-start":
		hang()
	case "garbage-start":
		fmt.Println("Welcome to the server! (not JSON)")
	case "fail-unless":
		if _, err := os.Stat(marker); err != nil {
			fmt.Fprintln(os.Stderr, "helper: marker missing, giving up")
			return 2
		}
	}
	fmt.Fprintln(os.Stderr, "helper: serving")
	s := sdk.NewServer(&sdk.Implementation{Name: "helper", Version: "1"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	add := func(name string, h func(ctx context.Context, in textArgs) *sdk.CallToolResult) {
		sdk.AddTool(s, &sdk.Tool{Name: name, Description: "helper " + name},
			func(ctx context.Context, _ *sdk.CallToolRequest, in textArgs) (*sdk.CallToolResult, any, error) {
				return h(ctx, in), nil, nil
			})
	}
	add("echo", func(_ context.Context, in textArgs) *sdk.CallToolResult { return text("echo: " + in.Text) })
	add("pid", func(context.Context, textArgs) *sdk.CallToolResult { return text(strconv.Itoa(os.Getpid())) })
	add("env", func(_ context.Context, in textArgs) *sdk.CallToolResult { return text(os.Getenv(in.Text)) })
	add("cwd", func(context.Context, textArgs) *sdk.CallToolResult {
		wd, _ := os.Getwd()
		return text(wd)
	})
	add("crash", func(context.Context, textArgs) *sdk.CallToolResult {
		fmt.Fprintln(os.Stderr, "helper: crashing")
		os.Exit(3)
		return nil
	})
	add("crash_once", func(context.Context, textArgs) *sdk.CallToolResult {
		if _, err := os.Stat(marker); err != nil {
			os.WriteFile(marker, nil, 0o644)
			os.Exit(3)
		}
		return text("survived")
	})
	add("hang", func(context.Context, textArgs) *sdk.CallToolResult {
		hang() // ignores cancellation
		return nil
	})
	add("garbage", func(context.Context, textArgs) *sdk.CallToolResult {
		os.Stdout.WriteString("this is not JSON-RPC\n")
		hang() // no answer after the garbage: the client must act on it alone
		return nil
	})
	// spawn starts a sleeper; with text "setsid", in a session of its own
	// (out of the server's process group).
	add("spawn", func(_ context.Context, in textArgs) *sdk.CallToolResult {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"=sleep")
		if in.Text == "setsid" {
			setsid(cmd)
		}
		if err := cmd.Start(); err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
		}
		return text(strconv.Itoa(cmd.Process.Pid))
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
	}
	return 0
}
