package cli

import (
	"bufio"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
)

// A run on PostgreSQL (storage.url) is listed, drawn as a tree and
// replayed by `sessions` commands of other processes (--db URL) while it
// runs; cancelled (SIGINT), it ends every session, and its replay is the
// stream its consumer saw.
func TestPostgresSessionsWhileRunning(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	_, db := pgtest.Schema(t)
	dir := t.TempDir()
	manifest := filepath.Join(dir, "agentpool.yaml")
	os.WriteFile(manifest, []byte(`storage: {url: "`+db+`"}
default_agent: lead
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: "Help slowly."}}]
        - "lead done"
  helper: {model: {type: scripted, delay: 100ms, turns: ["`+strings.Repeat("word ", 1000)+`"]}}
`), 0o644)
	run := exec.Command(cliBinary(t), "run", "-c", manifest, "--output", "jsonl", "go")
	run.Dir = dir
	run.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	var stderr strings.Builder
	run.Stderr = &stderr
	out, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		run.Process.Kill()
		run.Wait()
	}()
	guard := time.AfterFunc(2*time.Minute, func() { run.Process.Kill() })
	defer guard.Stop()
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	var (
		live      strings.Builder
		root, kid string
	)
	for kid == "" && sc.Scan() {
		live.WriteString(sc.Text() + "\n")
		e, err := event.Decode(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		switch v := e.(type) {
		case event.RunStarted:
			root = v.SessionID
		case event.Subagent:
			if _, ok := v.Event.(event.PartDelta); ok {
				kid = v.ChildSessionID // the helper is streaming
			}
		}
	}
	if kid == "" {
		t.Fatalf("the run ended before its child streamed: %s", stderr.String())
	}

	// While it runs, from other processes.
	list := runCLI(t, dir, "sessions", "list", "--db", db)
	if list.code != 0 || !strings.Contains(list.stdout, root) {
		t.Fatalf("sessions list (exit %d) lacks %s:\n%s%s", list.code, root, list.stdout, list.stderr)
	}
	tree, _, _, all := treeOf(t, dir, db, root)
	if len(all) != 2 || len(tree.Children) != 1 || tree.Children[0].ID != kid {
		t.Fatalf("tree while running: %+v", all)
	}
	if tree.Children[0].Status != session.StatusRunning {
		t.Errorf("the child is %s while it streams", tree.Children[0].Status)
	}
	evs := runCLI(t, dir, "sessions", "events", "--db", db, "--json", kid)
	if evs.code != 0 || !strings.Contains(evs.stdout, `"part_delta"`) {
		t.Fatalf("sessions events of the running child (exit %d):\n%s%s", evs.code, evs.stdout, evs.stderr)
	}

	if err := run.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		live.WriteString(sc.Text() + "\n")
	}
	if err := run.Wait(); run.ProcessState.ExitCode() != 130 {
		t.Fatalf("cancelled run: %v, want exit 130\n%s", err, stderr.String())
	}
	_, _, _, all = treeOf(t, dir, db, root)
	for _, s := range all {
		if s.Status != session.StatusAborted {
			t.Errorf("%s (%s) is %s after the cancelled run", s.AgentName, s.ID, s.Status)
		}
	}
	rep := runCLI(t, dir, "sessions", "events", "--db", db, "--json", "--tree", root)
	if rep.code != 0 || rep.stdout != live.String() {
		t.Errorf("the replay (exit %d) differs from the live stream", rep.code)
		diffLines(t, live.String(), rep.stdout)
	}
}

// A database that refuses the password is an error that does not show it.
func TestPostgresBadPasswordHidden(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "n0t-the-passw0rd")
	r := runCLI(t, t.TempDir(), "sessions", "list", "--db", u.String())
	if r.code == 0 || strings.Contains(r.stderr+r.stdout, "n0t-the-passw0rd") || !strings.Contains(r.stderr, "xxxxx") {
		t.Errorf("sessions list with a wrong password: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
