package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// crashEnv names the database the helper process writes to.
const crashEnv = "AGENTPOOL_SQLITE_CRASH_CHILD"

// crashManifest is a long nested run: a boss delegates to a parallel team
// whose two members stream thousands of words, one per millisecond.
func crashManifest() []byte {
	long := strings.TrimSpace(strings.Repeat("word ", 20000))
	return fmt.Appendf(nil, `
default_agent: boss
agents:
  boss:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: crew, prompt: "work", description: "Crew"}}]
        - "done"
    tools: [subagent]
  writer:
    model: {type: scripted, delay: 1ms, turns: [%q]}
  checker:
    model: {type: scripted, delay: 1ms, turns: [%q]}
teams:
  crew:
    mode: parallel
    members: [writer, checker]
`, long, long)
}

// crashChild is the helper process: when crashEnv is set it runs the long
// pool run on SQLite and prints "ACK n" each time the first n events of the
// stream are known to be committed, until it is killed.
func crashChild() bool {
	path := os.Getenv(crashEnv)
	if path == "" {
		return false
	}
	fail := func(err error) bool {
		fmt.Println("ERR", err)
		os.Exit(3)
		return true
	}
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		return fail(err)
	}
	m, err := config.Parse("crash.yaml", crashManifest())
	if err != nil {
		return fail(err)
	}
	p, err := pool.New(m, pool.Options{Store: st})
	if err != nil {
		return fail(err)
	}
	var count atomic.Int64
	var root atomic.Value
	go p.RunSink(context.Background(), pool.RunRequest{Prompt: "go"}, event.SinkFunc(func(e event.Event) {
		if rs, ok := e.(event.RunStarted); ok && count.Load() == 0 {
			root.Store(rs.SessionID)
		}
		// The recorder stored e before handing it on: counting here counts
		// events the store has accepted.
		count.Add(1)
	}))
	deadline := time.Now().Add(2 * time.Minute) // never outlive a lost parent for long
	printedRoot := false
	for time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		n := count.Load()
		if err := st.Flush(context.Background()); err != nil {
			return fail(err)
		}
		if r, ok := root.Load().(string); ok && !printedRoot {
			fmt.Println("ROOT", r)
			printedRoot = true
		}
		fmt.Println("ACK", n)
	}
	os.Exit(4)
	return true
}

func TestKillDuringRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
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
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	var (
		root  string
		acked int64
		acks  int
	)
	sc := bufio.NewScanner(out)
	timeout := time.AfterFunc(90*time.Second, func() { cmd.Process.Kill() })
	defer timeout.Stop()
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case "ERR":
			t.Fatalf("helper: %s", sc.Text())
		case "ROOT":
			root = f[1]
		case "ACK":
			acked, _ = strconv.ParseInt(f[1], 10, 64)
			acks++
		}
		// Kill in the middle: the run has children, and writes are going on.
		if root != "" && acked >= 1000 && acks >= 5 {
			break
		}
	}
	if root == "" || acked < 1000 {
		t.Fatalf("the helper stopped early: root %q, %d acknowledged events", root, acked)
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true

	// The database is intact.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	var fk int
	db.QueryRow(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&fk)
	if fk != 0 {
		t.Errorf("%d foreign key violations", fk)
	}
	db.Close()

	// Reopening recovers the dead run and keeps every acknowledged event.
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	recovered := map[string]bool{}
	for _, id := range st.Recovered() {
		recovered[id] = true
	}
	if !recovered[root] {
		t.Errorf("root %s not recovered (recovered: %v)", root, st.Recovered())
	}
	tree, err := session.Subtree(ctx, st, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) < 3 {
		t.Errorf("only %d sessions were stored before the kill", len(tree))
	}
	var total int64
	for _, s := range tree {
		if s.Status == session.StatusRunning {
			t.Errorf("%s (%s) still running after recovery", s.ID, s.AgentName)
		}
		if recovered[s.ID] != (s.Status == session.StatusInterrupted) {
			t.Errorf("%s (%s): status %s, recovered %v", s.ID, s.AgentName, s.Status, recovered[s.ID])
		}
		recs, err := st.Events(ctx, s.ID, 0)
		if err != nil {
			t.Fatalf("events of %s: %v", s.ID, err)
		}
		for i, r := range recs {
			if r.Seq != int64(i+1) {
				t.Fatalf("%s: record %d has seq %d", s.ID, i, r.Seq)
			}
		}
		total += int64(len(recs))
	}
	if total < acked {
		t.Errorf("%d events readable, %d were acknowledged before the kill", total, acked)
	}
	t.Logf("killed after %d acknowledged events; %d readable; %d sessions, %d interrupted", acked, total, len(tree), len(recovered))
	// The store works on.
	if err := st.AppendEvents(ctx, root, event.PartEnd{Index: 0}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}
