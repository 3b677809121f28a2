package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/agentpool/agentpool/checkpoint"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// A rewind (or a fork) between a background Bash's start and its read
// takes the shell's after-scan first: what it changed after its start
// call, which no BashOutput has captured yet, is undone by a rewind to a
// message after the start (and copied by a fork). The shell runs on only
// once its start call has completed (the sink runs in the agent's loop),
// and the loop goes on once it is done; no BashOutput ever reads it.
func TestRewindBeforeBackgroundRead(t *testing.T) {
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
        - "started it"
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
			msgs := messages(t, st, res.SessionID)
			last := msgs[len(msgs)-1] // "started it": after the start, before any read

			f, err := checkpoint.Fork(ctx, st, res.SessionID, "")
			if err != nil {
				t.Fatal(err)
			}
			cs, _ := session.CaptureStoreOf(st)
			caps, err := cs.Captures(ctx, f.ID)
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, c := range caps {
				paths = append(paths, c.Path)
			}
			slices.Sort(paths)
			if !slices.Equal(paths, []string{"bg.txt", "c.txt", "r.txt"}) {
				t.Errorf("the fork has captures of %q, want the shell's changes", paths)
			}

			rw, err := checkpoint.Rewind(ctx, st, res.SessionID, last.ID, checkpoint.Code)
			if err != nil || len(rw.Files) != 3 {
				t.Fatalf("rewind: %+v, %v", rw, err)
			}
			expectFile(t, ws, "c.txt", origC, 0o600)
			expectFile(t, ws, "r.txt", origR, 0o644)
			expectFile(t, ws, "bg.txt", nil, 0)
		})
	}
}
