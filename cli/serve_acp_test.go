package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// TestServeACPEditorCrash: an editor that dies closes agentpool's stdin
// and stdout at once, in the middle of a prompt. agentpool must not die of
// SIGPIPE on its next write: it ends the run as aborted, flushes the store
// and exits 0.
func TestServeACPEditorCrash(t *testing.T) {
	dir := t.TempDir()
	manifest := `agents:
  talker:
    model:
      type: scripted
      delay: 100ms
      turns:
        - text: "` + strings.Repeat("word ", 600) + `"
`
	if err := os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cliBinary(t), "serve", "acp", "--db", "sessions.db")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})

	out := bufio.NewReader(stdout)
	send := func(s string) {
		t.Helper()
		if _, err := stdin.Write([]byte(s + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	// read returns the next line that holds want.
	read := func(want string) string {
		t.Helper()
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("stdout ended waiting for %s: %v\nstderr: %s", want, err, stderr.String())
			}
			if strings.Contains(line, want) {
				return line
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	read(`"id":1`)
	send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"` + dir + `","mcpServers":[]}}`)
	var created struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(read(`"id":2`)), &created); err != nil || created.Result.SessionID == "" {
		t.Fatalf("session/new: %v %+v", err, created)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + created.Result.SessionID + `","prompt":[{"type":"text","text":"talk"}]}}`)
	read(`agent_message_chunk`)

	// The editor crashes.
	stdin.Close()
	stdout.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("agentpool after the editor closed its pipes: %v\nstderr: %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agentpool did not exit after the editor closed its pipes\nstderr: %s", stderr.String())
	}

	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.GetSession(context.Background(), created.Result.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != session.StatusAborted {
		t.Errorf("session stored as %s (stop reason %s), want aborted", s.Status, s.StopReason)
	}
}
