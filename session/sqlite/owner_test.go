package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// helper is a running crash helper process (see crashChild).
type helper struct {
	cmd  *exec.Cmd
	root string
	done chan struct{}
}

// startHelper starts the crash helper on path and returns once its run has
// a root session and has committed some of its events.
func startHelper(t *testing.T, path string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(h.kill)
	guard := time.AfterFunc(90*time.Second, func() { cmd.Process.Kill() }) // never hang the test
	t.Cleanup(func() { guard.Stop() })
	ready := make(chan string, 1)
	go func() {
		defer close(h.done)
		sc := bufio.NewScanner(out)
		root, acks := "", 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 2 && f[0] == "ROOT":
				root = f[1]
			case len(f) == 2 && f[0] == "ACK" && root != "" && f[1] != "0":
				acks++
				if acks == 2 {
					ready <- root
				}
			case len(f) > 0 && f[0] == "ERR":
				ready <- ""
			}
		}
		io.Copy(io.Discard, out)
		close(ready)
	}()
	h.root = <-ready
	if h.root == "" {
		t.Fatal("the helper stopped before its run stored anything")
	}
	return h
}

// kill SIGKILLs the helper and waits for it.
func (h *helper) kill() {
	if h.cmd.ProcessState != nil {
		return
	}
	h.cmd.Process.Kill()
	<-h.done
	h.cmd.Wait()
}

// setInstancePIDs rewrites the process id of every registered store.
func setInstancePIDs(t *testing.T, path string, pid int) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE instances SET pid = ?`, pid)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatal("no instance registered")
	}
}

// A killed process's sessions are recovered whatever its process id now
// names: the init process of a container (agentpool ran as PID 1 there,
// with the same host name) or a live process that reuses the id.
func TestRecoveryDoesNotTrustPIDs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	for _, tc := range []struct {
		name string
		pid  int
	}{
		{"pid 1 of a container", 1},
		{"pid reused by a live process", os.Getpid()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "crash.db")
			h := startHelper(t, path)
			h.kill()
			setInstancePIDs(t, path, tc.pid)
			st, tree, _ := checkAfterKill(t, path, killed{root: h.root, acked: 0})
			defer st.Close()
			if len(tree) == 0 {
				t.Fatal("no session of the killed run")
			}
		})
	}
}

// resumeManifest is a quick pool on the crash helper's agent names.
const resumeManifest = `
default_agent: boss
agents:
  boss:
    model: {type: test, custom_output_text: "resumed"}
`

// A session that another process runs cannot be run here: the refusal
// says which process on which host has it. Once that process is dead, the
// session is taken over by a store that was open all along, with what the
// dead run left open closed first.
func TestRunRefusedWhileAnotherProcessRuns(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	h := startHelper(t, path)
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := config.Parse("resume.yaml", []byte(resumeManifest))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	host, _ := os.Hostname()
	_, err = p.RunSink(ctx, pool.RunRequest{SessionID: h.root, Prompt: "again"}, event.SinkFunc(func(event.Event) {}))
	want := fmt.Sprintf("session %s is already running (in process %d on host %s)", h.root, h.cmd.Process.Pid, host)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("resume while another process runs the session: %v\nwant an error with %q", err, want)
	}

	h.kill()
	res, err := p.RunSink(ctx, pool.RunRequest{SessionID: h.root, Prompt: "again"}, event.SinkFunc(func(event.Event) {}))
	if err != nil {
		t.Fatalf("resume once the other process is dead: %v", err)
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "resumed" {
		t.Fatalf("resumed run: %+v", res.Result)
	}
	tree, err := session.Subtree(ctx, st, h.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tree[1:] {
		if s.Status == session.StatusRunning {
			t.Errorf("%s (%s) of the dead run still running", s.ID, s.AgentName)
		}
	}
	checkStartsEnd(t, st, h.root)
}

// checkStartsEnd checks the replay of root's tree: every
// spawn_session_start has exactly one spawn_session_end after it.
func checkStartsEnd(t *testing.T, st session.Store, root string) {
	t.Helper()
	rs, err := session.ReplayTree(context.Background(), st, root)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]int{}
	for _, r := range rs {
		_, inner := event.Unwrap(root, r.Event)
		switch e := inner.(type) {
		case event.SpawnSessionStart:
			open[e.ChildSessionID]++
		case event.SpawnSessionEnd:
			if open[e.ChildSessionID] != 1 {
				t.Errorf("spawn_session_end of %s without one open start", e.ChildSessionID)
			}
			open[e.ChildSessionID]--
		}
	}
	for child, n := range open {
		if n != 0 {
			t.Errorf("child %s has a spawn_session_start and no spawn_session_end in the replay", child)
		}
	}
}
