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
// stdout (env: more variables for it), killed at the test's end (or after a minute), and returns its
// process and a scanner of its events.
func startRun(t *testing.T, dir, manifest, db string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	run := exec.Command(cliBinary(t), "run", "-c", manifest, "--db", db, "--output", "jsonl", "take your time")
	run.Dir = dir
	run.Env = append(append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir()), env...)
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
	t.Parallel() // mostly waits on its CLI processes
	ctl, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ctl) })
	// Each process gets it (t.Setenv would keep the test from running in
	// parallel).
	env := []string{"XDG_RUNTIME_DIR=" + ctl}
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
	first, sc := startRun(t, dir, manifest, db, env...)
	child := firstChild(t, sc)
	if child == "" {
		t.Fatal("the run started no child")
	}
	rest := restOf(sc)

	r := runCLIEnv(t, dir, []string{"XDG_RUNTIME_DIR=" + t.TempDir()}, "sessions", "--db", db, "cancel", child)
	host, _ := os.Hostname()
	want := fmt.Sprintf("session %s runs in process %d on host %s, not in this one", child, first.Process.Pid, host)
	if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "no control socket") {
		t.Fatalf("cancel with no socket to ask: exit %d\nstderr: %s\nwant %q", r.code, r.stderr, want)
	}
	r = runCLIEnv(t, dir, env, "sessions", "--db", db, "cancel", child)
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
	checkChildCancelled(t, evs, child, "")
	r = runCLIEnv(t, dir, env, "sessions", "--db", db, "cancel", "ses_unknown")
	if r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("cancel of an unknown session: exit %d\nstderr: %s", r.code, r.stderr)
	}
}

// firstChild reads a run's JSON lines up to its first spawn_session_start
// and returns the child's id ("" when the stream ended first).
func firstChild(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	for sc.Scan() {
		e, err := event.Decode(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := e.(event.SpawnSessionStart); ok {
			return s.ChildSessionID
		}
	}
	return ""
}

// restOf collects the rest of a run's events, sent once its stream ends.
func restOf(sc *bufio.Scanner) <-chan []event.Event {
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
	return rest
}

// checkChildCancelled checks the events after a child was cancelled: it
// ended aborted, the parent's task result says so (when result is set),
// and the run ended with the parent's answer "done".
func checkChildCancelled(t *testing.T, evs []event.Event, child, result string) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events after the child started")
	}
	var ended *event.SpawnSessionEnd
	var got string
	for _, e := range evs {
		_, in := event.Unwrap("", e)
		switch v := in.(type) {
		case event.SpawnSessionEnd:
			if v.ChildSessionID == child {
				ended = &v
			}
		case event.ToolCallComplete:
			if v.ToolName == "task" {
				got = v.ToolResult
			}
		}
	}
	if ended == nil || ended.StopReason != event.StopAborted {
		t.Errorf("the child's end: %+v, want aborted", ended)
	}
	if !strings.Contains(got, result) {
		t.Errorf("the parent's task result %q does not say %q", got, result)
	}
	if last, ok := evs[len(evs)-1].(event.StreamComplete); !ok || last.Message.Content != "done" {
		t.Errorf("the run's last event %#v, want the parent's completion", evs[len(evs)-1])
	}
}
