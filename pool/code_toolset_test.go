package pool_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
)

// An AgentPool manifest's code toolset gives its agent format_code,
// which formats a file of the pool's workspace with gofmt.
func TestCodeToolsetFormatsInTheWorkspace(t *testing.T) {
	if _, err := exec.LookPath("gofmt"); err != nil {
		t.Skip("gofmt is not installed")
	}
	m, err := config.Parse("agentpool.yml", []byte(`
agents:
  coder:
    model:
      type: test
      call_tools: [format_code]
      tool_args:
        format_code: {path: main.go}
      custom_output_text: Formatted.
    toolsets:
      - type: code
    tool_approval: {format_code: allow}
`))
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	main := filepath.Join(ws, "main.go")
	if err := os.WriteFile(main, []byte("package main\nfunc main(){println( 1 )}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Workspace: ws, Registry: batteries.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: "coder", Prompt: "format main.go"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("result %+v", res.Result)
	}
	var done *event.ToolCallComplete
	for _, e := range events() {
		_, inner := event.Unwrap(res.SessionID, e)
		if c, ok := inner.(event.ToolCallComplete); ok && c.ToolName == "format_code" {
			done = &c
		}
	}
	if done == nil || done.IsError {
		t.Fatalf("format_code call: %+v", done)
	}
	got, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	if want := "package main\n\nfunc main() { println(1) }\n"; string(got) != want {
		t.Fatalf("main.go = %q, want %q", got, want)
	}
}
