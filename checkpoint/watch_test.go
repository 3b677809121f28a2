package checkpoint_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/checkpoint"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// watchedLevels: lead → mid → leaf. Mid's Bash edits c.txt in place
// (sed -i), creates n.txt (mode 0700) and removes r.txt; leaf's MCP tool
// (server-filesystem's write_file) overwrites a.txt and creates m.txt.
func watchedLevels(server, ws string) string {
	return `
default_agent: lead
mcp_servers:
  - name: fs
    command: node
    args: ["` + server + `", "` + ws + `"]
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: mid, prompt: Go on.}}]
        - "lead done"
  mid:
    tools: [subagent, execution]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: "sed -i s/beta/BETA/ c.txt && printf 'new\\n' > n.txt && chmod 700 n.txt && rm r.txt"}}]
        - tool_calls: [{name: task, args: {agent_or_team: leaf, prompt: Finish.}}]
        - "mid done"
  leaf:
    tools: []
    model:
      type: scripted
      turns:
        - tool_calls: [{name: mcp__fs__write_file, args: {path: "` + filepath.Join(ws, "a.txt") + `", content: "by mcp\n"}}]
        - tool_calls: [{name: mcp__fs__write_file, args: {path: "` + filepath.Join(ws, "m.txt") + `", content: "made by mcp\n"}}]
        - "leaf done"
`
}

func mcpFilesystem(t *testing.T) string {
	t.Helper()
	mods := os.Getenv("AGENTPOOL_MCP_NODE_MODULES")
	if mods == "" {
		t.Skip("AGENTPOOL_MCP_NODE_MODULES is unset: `make test` installs tests/mcp and sets it")
	}
	p := filepath.Join(mods, "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("server-filesystem: %v", err)
	}
	return p
}

// What Bash and an MCP tool changed three levels down is captured and a
// rewind to before the root's first message restores it byte for byte,
// modes included, created files removed.
func TestRewindBashAndMCP(t *testing.T) {
	server := mcpFilesystem(t)
	for name, open := range allStores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			defer st.Close()
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			origR := []byte("to be removed\x00\r\n")
			for _, f := range []struct {
				name string
				b    []byte
				mode os.FileMode
			}{{"a.txt", origA, 0o640}, {"c.txt", origC, 0o600}, {"r.txt", origR, 0o604}} {
				if err := os.WriteFile(filepath.Join(ws, f.name), f.b, f.mode); err != nil {
					t.Fatal(err)
				}
				os.Chmod(filepath.Join(ws, f.name), f.mode) // past the umask
			}
			m, err := config.Parse("agentpool.yaml", []byte(watchedLevels(server, ws)))
			if err != nil {
				t.Fatal(err)
			}
			p, err := pool.New(m, pool.Options{Store: st, Workspace: ws, Registry: batteries.Registry()})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, nil)
			if err != nil || res.Result.Output != "lead done" {
				t.Fatalf("run: %+v, %v", res, err)
			}
			expectFile(t, ws, "c.txt", []byte("alpha\nBETA\ngamma\n"), 0o600)
			expectFile(t, ws, "n.txt", []byte("new\n"), 0o700)
			expectFile(t, ws, "r.txt", nil, 0)
			expectFile(t, ws, "a.txt", []byte("by mcp\n"), 0o640)
			expectFile(t, ws, "m.txt", []byte("made by mcp\n"), 0o644)
			all, err := session.Subtree(ctx, st, res.SessionID)
			if err != nil || len(all) != 3 {
				t.Fatalf("sessions %+v, %v", all, err)
			}

			msgs := messages(t, st, res.SessionID)
			rw, err := checkpoint.Rewind(ctx, st, res.SessionID, msgs[0].ID, checkpoint.Code)
			if err != nil {
				t.Fatalf("rewind: %+v, %v", rw, err)
			}
			if len(rw.Files) != 5 {
				t.Errorf("rewind restored %+v, want 5 files", rw.Files)
			}
			expectFile(t, ws, "a.txt", origA, 0o640)
			expectFile(t, ws, "c.txt", origC, 0o600)
			expectFile(t, ws, "r.txt", origR, 0o604)
			expectFile(t, ws, "n.txt", nil, 0)
			expectFile(t, ws, "m.txt", nil, 0)
		})
	}
}

// A scan that stops short (more files than its bound) and a file over
// the bound of the bytes kept are said in the call's result, never
// silently.
func TestWatchBoundsReported(t *testing.T) {
	defer checkpoint.SetScanBounds(3, 8)()
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte("more than eight bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newPool(t, `
agents:
  a:
    tools: [execution]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: "echo changed > big.txt"}}]
        - tool_calls: [{name: Bash, args: {command: "touch 1 2 3 4"}}]
        - "done"
`, st, ws)
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, m := range messages(t, st, res.SessionID) {
		for _, part := range m.Parts {
			if part.Kind == model.PartToolResult {
				results = append(results, part.Text)
			}
		}
	}
	if len(results) != 2 {
		t.Fatalf("tool results %q", results)
	}
	if !strings.Contains(results[0], "not captured, so a rewind will not restore them: big.txt (21 bytes; over the scan's bound)") {
		t.Errorf("first result %q does not say big.txt was not captured", results[0])
	}
	if !strings.Contains(results[1], "the workspace scan stopped short (more than 3 files)") {
		t.Errorf("second result %q does not say the scan stopped short", results[1])
	}
}

// What a background Bash changes after its start is captured when it is
// read (BashOutput): the test lets it go on only once its start call has
// completed (the sink runs in the agent's loop), and waits for it to be
// done before the loop goes on.
func TestRewindBackgroundBash(t *testing.T) {
	for _, name := range []string{"memory", "sqlite"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := allStores[name](t)
			defer st.Close()
			ws := t.TempDir()
			origR := []byte("removed in the background\n")
			os.WriteFile(filepath.Join(ws, "c.txt"), origC, 0o600)
			os.WriteFile(filepath.Join(ws, "r.txt"), origR, 0o644)
			for _, f := range []string{"f1", "f2"} {
				if err := syscall.Mkfifo(filepath.Join(ws, f), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p := newPool(t, `
agents:
  a:
    tools: [execution]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {run_in_background: true, command: "cat f1 >/dev/null; sed -i s/alpha/ALPHA/ c.txt; printf bg > bg.txt; rm r.txt; echo done > f2"}}]
        - tool_calls: [{name: BashOutput, args: {bash_id: bash_1}}]
        - "done"
`, st, ws)
			var released bool
			sink := event.SinkFunc(func(e event.Event) {
				c, ok := e.(event.ToolCallComplete)
				if !ok || c.ToolName != "Bash" || released {
					return
				}
				released = true
				if err := os.WriteFile(filepath.Join(ws, "f1"), []byte("go\n"), 0o600); err != nil {
					t.Error(err)
				}
				if _, err := os.ReadFile(filepath.Join(ws, "f2")); err != nil {
					t.Error(err)
				}
			})
			res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, sink)
			if err != nil || !released {
				t.Fatalf("run: %+v, %v (released %v)", res, err, released)
			}
			expectFile(t, ws, "c.txt", []byte("ALPHA\nbeta\ngamma\n"), 0o600)
			expectFile(t, ws, "bg.txt", []byte("bg"), 0o644)
			msgs := messages(t, st, res.SessionID)
			rw, err := checkpoint.Rewind(ctx, st, res.SessionID, msgs[0].ID, checkpoint.Code)
			if err != nil || len(rw.Files) != 3 {
				t.Fatalf("rewind: %+v, %v", rw, err)
			}
			expectFile(t, ws, "c.txt", origC, 0o600)
			expectFile(t, ws, "r.txt", origR, 0o644)
			expectFile(t, ws, "bg.txt", nil, 0)
		})
	}
}

// What the code toolset's format_code (gofmt, a process of its own)
// rewrote is captured like a Bash change, and a rewind restores it.
func TestRewindFormatCode(t *testing.T) {
	if _, err := exec.LookPath("gofmt"); err != nil {
		t.Skip("gofmt is not installed")
	}
	const messy = "package main\nfunc main(){\nx:=1\n  println( x )\n}\n"
	for name, open := range allStores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			defer st.Close()
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte(messy), 0o640); err != nil {
				t.Fatal(err)
			}
			os.Chmod(filepath.Join(ws, "main.go"), 0o640) // past the umask
			m, err := config.Parse("agentpool.yaml", []byte(`
agents:
  fmt:
    tools: [code]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: format_code, args: {path: main.go}}]
        - "formatted"
`))
			if err != nil {
				t.Fatal(err)
			}
			p, err := pool.New(m, pool.Options{Store: st, Workspace: ws, Registry: batteries.Registry()})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, nil)
			if err != nil || res.Result.Output != "formatted" {
				t.Fatalf("run: %+v, %v", res, err)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "main.go")); string(b) == messy {
				t.Fatal("format_code changed nothing")
			}
			msgs := messages(t, st, res.SessionID)
			rw, err := checkpoint.Rewind(ctx, st, res.SessionID, msgs[0].ID, checkpoint.Code)
			if err != nil || len(rw.Files) != 1 {
				t.Fatalf("rewind: %+v, %v", rw, err)
			}
			expectFile(t, ws, "main.go", []byte(messy), 0o640)
		})
	}
}
