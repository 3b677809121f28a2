package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/internal/temporaltest"
)

// devServer starts the Temporal dev server (AGENTPOOL_TEMPORAL_BIN, built
// by make test-deps) on loopback for the test; skipped without it, but
// under CI=true.
func devServer(t *testing.T) string {
	t.Helper()
	return temporaltest.StartDev(t)
}

const temporalPool = `
default_agent: lead
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: "Help."}}]
        - "lead done"
  helper: {model: {type: scripted, turns: ["helped"]}}
`

// startWorker runs `agentpool worker -c manifest --db db` for the test
// (env: more variables for it) and returns its stderr; the cleanup stops it
// with SIGTERM and fails the test unless it exits 0 soon after.
func startWorker(t *testing.T, manifest, db string, env ...string) *lockedBuf {
	t.Helper()
	w := exec.Command(cliBinary(t), "worker", "-c", manifest, "--db", db)
	w.Env = append(append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir()), env...)
	w.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	werr := &lockedBuf{}
	w.Stderr = werr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	wdone := make(chan error, 1)
	go func() { wdone <- w.Wait() }()
	t.Cleanup(func() {
		_ = w.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-wdone:
			if err != nil {
				t.Errorf("worker after SIGTERM: %v\n%s", err, werr.String())
			}
		case <-time.After(40 * time.Second):
			_ = w.Process.Kill()
			<-wdone
			t.Error("worker did not stop on SIGTERM")
		}
	})
	return werr
}

// temporalDB is the store of a test on Temporal: a PostgreSQL schema when
// AGENTPOOL_TEST_POSTGRES is set (the store for several machines, as in
// CI), else a SQLite file in dir.
func temporalDB(t *testing.T, dir string) string {
	if os.Getenv(pgtest.Env) != "" {
		_, db := pgtest.Schema(t)
		return db
	}
	return filepath.Join(dir, "pool.db")
}

// agentpool run with engine temporal, on an agentpool worker: the same
// output, exit code and stream shape as the run in one process; the
// worker stops on SIGTERM.
func TestRunOnTemporalWorker(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	addr := devServer(t)
	dir := t.TempDir()
	local := filepath.Join(dir, "local.yaml")
	remote := filepath.Join(dir, "remote.yaml")
	os.WriteFile(local, []byte(temporalPool), 0o644)
	os.WriteFile(remote, []byte(temporalPool+fmt.Sprintf("execution: {engine: temporal, address: %q, task_queue: cli-test}\n", addr)), 0o644)
	db := temporalDB(t, dir)

	werr := startWorker(t, remote, db)

	got := runCLI(t, dir, "run", "-c", remote, "--db", db, "--output", "jsonl", "go")
	if got.code != 0 {
		t.Fatalf("run on temporal: exit %d\n%s\nworker: %s", got.code, got.stderr, werr.String())
	}
	want := runCLI(t, dir, "run", "-c", local, "--db", filepath.Join(dir, "local.db"), "--output", "jsonl", "go")
	a, b := decodeJSONL(t, got.stdout), decodeJSONL(t, want.stdout)
	root := a[0].(event.RunStarted).SessionID
	if err := eventtest.CheckInvariants(root, a); err != nil {
		t.Errorf("invariants: %v", err)
	}
	if sa, sb := kinds(root, a), kinds(b[0].(event.RunStarted).SessionID, b); sa != sb {
		t.Errorf("streams differ:\ntemporal:   %s\nin process: %s", sa, sb)
	}
	if last, ok := a[len(a)-1].(event.StreamComplete); !ok || last.Message.Content != "lead done" {
		t.Errorf("last event = %#v", a[len(a)-1])
	}
}

func kinds(root string, evs []event.Event) string {
	var b strings.Builder
	for _, e := range evs {
		_, inner := event.Unwrap(root, e)
		d := 0
		if s, ok := e.(event.Subagent); ok {
			d = len(s.Path)
		}
		fmt.Fprintf(&b, "%d:%s ", d, inner.Kind())
	}
	return b.String()
}

// agentpool run on Temporal gives the engine its broker: a grandchild's
// Write, whose rule is ask, is asked of run's front end (here --approve
// allow) rather than refused on the worker, and the file is written.
func TestRunOnTemporalAsksItsFrontEnd(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	addr := devServer(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "pool.yaml")
	os.WriteFile(manifest, []byte(fmt.Sprintf(`execution: {engine: temporal, address: %q, task_queue: cli-approvals}
default_agent: boss
workspace: ws
agents:
  boss:
    workers: [writer]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: ask_writer, args: {prompt: "write hello.md"}}]
        - text: "boss done"
  writer:
    tools: [file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Write, args: {file_path: hello.md, content: "hello\n"}}]
        - text: "writer done"
`, addr)), 0o644)
	os.Mkdir(filepath.Join(dir, "ws"), 0o755)
	db := temporalDB(t, dir)
	werr := startWorker(t, manifest, db)

	r := runCLI(t, dir, "run", "-c", manifest, "--db", db, "--approve", "allow", "go")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\nworker: %s", r.code, r.stderr, werr.String())
	}
	if !strings.Contains(r.stderr, "✓ boss › writer: Write hello.md allowed without asking (--approve allow)") {
		t.Errorf("stderr does not show the answer:\n%s", r.stderr)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "ws", "hello.md")); err != nil || string(data) != "hello\n" {
		t.Errorf("hello.md = %q, %v; want it written by the worker", data, err)
	}
}

// On Temporal, `sessions cancel CHILD` reaches the child's workflow
// through the process that submitted the run (its control socket, then
// its engine): the child ends aborted, its parent is told and completes.
func TestSessionsCancelChildOnTemporal(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes and dev server
	ctl, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ctl) })
	// Each process gets it (t.Setenv would keep the test from running in
	// parallel).
	env := []string{"XDG_RUNTIME_DIR=" + ctl}
	addr := devServer(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "m.yaml")
	os.WriteFile(manifest, []byte(fmt.Sprintf(`execution: {engine: temporal, address: %q, task_queue: cli-cancel}
default_agent: boss
agents:
  boss:
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: slow, prompt: go}}]}, done]}
    tools: [subagent]
  slow:
    model: {type: scripted, delay: 100ms, turns: ["`+strings.Repeat("word ", 600)+`"]}
`, addr)), 0o644)
	db := temporalDB(t, dir)
	werr := startWorker(t, manifest, db, env...)
	first, sc := startRun(t, dir, manifest, db, env...)
	child := firstChild(t, sc)
	if child == "" {
		t.Fatalf("the run started no child\nworker: %s", werr.String())
	}
	rest := restOf(sc)
	r := runCLIEnv(t, dir, env, "sessions", "--db", db, "cancel", child)
	if r.code != 0 || !strings.Contains(r.stdout, "session "+child+" cancelled") {
		t.Fatalf("cancel: exit %d\nstdout: %s\nstderr: %s\nworker: %s", r.code, r.stdout, r.stderr, werr.String())
	}
	first.Wait()
	checkChildCancelled(t, <-rest, child, "cancelled by the user")
}
