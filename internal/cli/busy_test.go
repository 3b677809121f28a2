package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
)

// startRun starts `agentpool run` of manifest on db with JSON lines on
// stdout, killed at the test's end (or after a minute), and returns its
// process and a scanner of its events.
func startRun(t *testing.T, dir, manifest, db string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	run := exec.Command(cliBinary(t), "run", "-c", manifest, "--db", db, "--output", "jsonl", "take your time")
	run.Dir = dir
	run.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	out, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	guard := time.AfterFunc(60*time.Second, func() { run.Process.Kill() })
	t.Cleanup(func() {
		guard.Stop()
		run.Process.Kill()
		run.Wait()
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	return run, sc
}

// `run --session ID` while another agentpool process runs that session is
// refused, and the error says which process on which host runs it.
func TestRunSessionRefusedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	manifest := filepath.Join(dir, "m.yaml")
	os.WriteFile(manifest, []byte(`
agents:
  slow:
    model: {type: scripted, delay: 100ms, turns: ["`+strings.Repeat("word ", 300)+`"]}
`), 0o644)
	first, sc := startRun(t, dir, manifest, db)
	if !sc.Scan() {
		t.Fatal("the first run wrote nothing")
	}
	e, err := event.Decode(sc.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	sid := e.(event.RunStarted).SessionID
	go func() {
		for sc.Scan() {
		}
	}()

	r := runCLI(t, dir, "run", "-c", manifest, "--db", db, "--output", "jsonl", "--session", sid, "me too")
	host, _ := os.Hostname()
	want := fmt.Sprintf("session %s is already running (in process %d on host %s)", sid, first.Process.Pid, host)
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("second run of a running session: exit %d\nstderr: %s\nwant an error with %q", r.code, r.stderr, want)
	}
	if strings.Contains(r.stdout, `"run_started"`) {
		t.Errorf("the refused run started: %s", r.stdout)
	}
}

// `sessions cancel CHILD` while another agentpool process runs the child's
// tree asks that process, through its control socket, to cancel the child:
// the child ends aborted and its parent goes on to complete the run. A
// process that cannot be asked (no socket where the command looks) is
// named with how to cancel it there; an unknown session is an error that
// says so.
func TestSessionsCancelAcrossProcesses(t *testing.T) {
	ctl, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ctl) })
	t.Setenv("XDG_RUNTIME_DIR", ctl)
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	manifest := filepath.Join(dir, "m.yaml")
	os.WriteFile(manifest, []byte(`
default_agent: boss
agents:
  boss:
    model: {type: scripted, turns: [{tool_calls: [{name: task, args: {agent_or_team: slow, prompt: go}}]}, done]}
    tools: [subagent]
  slow:
    model: {type: scripted, delay: 100ms, turns: ["`+strings.Repeat("word ", 300)+`"]}
`), 0o644)
	first, sc := startRun(t, dir, manifest, db)
	child := ""
	for child == "" && sc.Scan() {
		e, err := event.Decode(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := e.(event.SpawnSessionStart); ok {
			child = s.ChildSessionID
		}
	}
	if child == "" {
		t.Fatal("the run started no child")
	}
	rest := make(chan []event.Event, 1)
	go func() {
		var evs []event.Event
		for sc.Scan() {
			if e, err := event.Decode(sc.Bytes()); err == nil {
				evs = append(evs, e)
			}
		}
		rest <- evs
	}()

	r := runCLIEnv(t, dir, []string{"XDG_RUNTIME_DIR=" + t.TempDir()}, "sessions", "--db", db, "cancel", child)
	host, _ := os.Hostname()
	want := fmt.Sprintf("session %s runs in process %d on host %s, not in this one", child, first.Process.Pid, host)
	if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "no control socket") {
		t.Fatalf("cancel with no socket to ask: exit %d\nstderr: %s\nwant %q", r.code, r.stderr, want)
	}
	r = runCLI(t, dir, "sessions", "--db", db, "cancel", child)
	want = fmt.Sprintf("session %s cancelled (in process %d): its run ended aborted", child, first.Process.Pid)
	if r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Fatalf("cancel of another process's child: exit %d\nstdout: %s\nstderr: %s\nwant %q", r.code, r.stdout, r.stderr, want)
	}
	// The run completes; its exit status says work was skipped (the
	// stderr line: "run completed, but 1 child session was cancelled").
	if err := first.Wait(); first.ProcessState.ExitCode() != exitIncomplete {
		t.Errorf("the run after its child was cancelled: %v, want exit %d", err, exitIncomplete)
	}
	evs := <-rest
	var ended *event.SpawnSessionEnd
	for _, e := range evs {
		_, in := event.Unwrap("", e)
		if se, ok := in.(event.SpawnSessionEnd); ok && se.ChildSessionID == child {
			ended = &se
		}
	}
	if ended == nil || ended.StopReason != event.StopAborted {
		t.Errorf("the child's end: %+v, want aborted", ended)
	}
	if last, ok := evs[len(evs)-1].(event.StreamComplete); !ok || last.Message.Content != "done" {
		t.Errorf("the run's last event %#v, want the parent's completion", evs[len(evs)-1])
	}
	r = runCLI(t, dir, "sessions", "--db", db, "cancel", "ses_unknown")
	if r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("cancel of an unknown session: exit %d\nstderr: %s", r.code, r.stderr)
	}
}
