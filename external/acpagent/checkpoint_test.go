package acpagent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentpool/agentpool/checkpoint"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/external/acpagent"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// rewound rewinds the files of session sid back to before its first
// message (the prompt the agent answered) and returns what it restored
// (path:action, sorted), after checking the captures of sid: each held by
// that message and, when call is not empty, by the agent's tool call
// call or the Bash call that started the terminal.
func rewound(t *testing.T, p *pool.Pool, sid, call string) []string {
	t.Helper()
	ctx := context.Background()
	st := p.Store()
	msgs, err := st.Messages(ctx, sid)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("messages %+v, %v", msgs, err)
	}
	cs, ok := session.CaptureStoreOf(st)
	if !ok {
		t.Fatal("the pool's store keeps no captures")
	}
	caps, err := cs.Captures(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range caps {
		if c.MessageID != msgs[0].ID {
			t.Errorf("capture of %s held by message %q, want the prompt %s", c.Path, c.MessageID, msgs[0].ID)
		}
		// The agent shows the terminal in a notification, which the
		// SDK may hand over after the request that ends the terminal:
		// then the capture is the starting call's.
		if call != "" && c.ToolCallID != call && !strings.HasPrefix(c.ToolCallID, "acpterm_") {
			t.Errorf("capture of %s held by call %q, want %s", c.Path, c.ToolCallID, call)
		}
	}
	rw, err := checkpoint.Rewind(ctx, st, sid, msgs[0].ID, checkpoint.Code)
	if err != nil {
		t.Fatalf("rewind: %+v, %v", rw, err)
	}
	var out []string
	for _, f := range rw.Files {
		out = append(out, f.Path+":"+f.Action)
	}
	slices.Sort(out)
	return out
}

// expectContent checks a file of dir (nil want: absent).
func expectContent(t *testing.T, dir, name string, want []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	switch {
	case want == nil && !os.IsNotExist(err):
		t.Errorf("%s: %q, %v; want it absent", name, b, err)
	case want != nil && (err != nil || string(b) != string(want)):
		t.Errorf("%s: %q, %v; want %q", name, b, err, want)
	}
}

// What an external agent's terminal command changes is captured, like a
// background Bash's, between terminal/create and the end of the command
// as the agent sees it (here wait_for_exit; the session's end when the
// agent never waits for it, nor releases it), for the prompt the agent
// answers: a rewind of the member's session (or of its parent) restores
// it. The command runs in a directory three levels down (its cwd: the
// workspace scanned is that directory).
func TestTerminalChangesRewound(t *testing.T) {
	for _, flow := range []string{"track", "start"} {
		t.Run(flow, func(t *testing.T) {
			dir := t.TempDir()
			deep := filepath.Join(dir, "a", "b", "c")
			if err := os.MkdirAll(deep, 0o755); err != nil {
				t.Fatal(err)
			}
			origC, origR := []byte("alpha\nbeta\n"), []byte("to be removed\r\n\xff")
			os.WriteFile(filepath.Join(deep, "c.txt"), origC, 0o644)
			os.WriteFile(filepath.Join(deep, "r.txt"), origR, 0o644)
			script := "sed -i s/alpha/ALPHA/ c.txt && printf new > n.txt && rm r.txt"
			prompt := "track " + terminalRequest(t, map[string]any{"command": "sh", "args": []string{"-c", script}, "cwd": deep})
			if flow == "start" {
				fifo := filepath.Join(t.TempDir(), "fifo")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Fatal(err)
				}
				prompt = "start " + fifo + " " + terminalRequest(t, map[string]any{"command": "sh", "args": []string{"-c", script + " && echo up > " + fifo}, "cwd": deep})
			}
			node := testAgentNode(t, acpagent.Config{Dir: dir, AllowTerminal: true})
			p, _ := testPool(t, allow, node)
			res, _ := run(t, context.Background(), p, "tester", prompt, nil)
			if res.Result.StopReason != event.StopCompleted {
				t.Fatalf("result %+v", res.Result)
			}
			if r := replyOf(t, res.Result); r.Error != "" {
				t.Fatalf("reply %+v", r)
			}
			expectContent(t, deep, "c.txt", []byte("ALPHA\nbeta\n"))
			expectContent(t, deep, "n.txt", []byte("new"))
			expectContent(t, deep, "r.txt", nil)
			call := ""
			if flow == "track" {
				call = "call_terminal"
			}
			got := rewound(t, p, res.SessionID, call)
			if want := []string{"c.txt:restored", "n.txt:removed", "r.txt:restored"}; !slices.Equal(got, want) {
				t.Errorf("rewind did %q, want %q", got, want)
			}
			expectContent(t, deep, "c.txt", origC)
			expectContent(t, deep, "n.txt", nil)
			expectContent(t, deep, "r.txt", origR)
		})
	}
}

// An external agent's fs/write_text_file is captured (our Write serves
// it) for the prompt the agent answers, so that a rewind of the member's
// own session restores the file, as one of its parent does.
func TestWriteTextFileRewound(t *testing.T) {
	dir := t.TempDir()
	orig := []byte("the original\n")
	os.WriteFile(filepath.Join(dir, "w.txt"), orig, 0o644)
	node := testAgentNode(t, acpagent.Config{Dir: dir, AllowFileOperations: true})
	p, _ := testPool(t, allow, node)
	res, _ := run(t, context.Background(), p, "tester", "rewrite w.txt rewritten by the agent", nil)
	if r := replyOf(t, res.Result); r.Error != "" || res.Result.StopReason != event.StopCompleted {
		t.Fatalf("reply %+v, result %+v", r, res.Result)
	}
	expectContent(t, dir, "w.txt", []byte("rewritten by the agent"))
	if got := rewound(t, p, res.SessionID, ""); !slices.Equal(got, []string{"w.txt:restored"}) {
		t.Errorf("rewind did %q", got)
	}
	expectContent(t, dir, "w.txt", orig)
}
