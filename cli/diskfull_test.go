package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/internal/tinyfs"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
	"github.com/agentpool/agentpool/session/storetest"
)

// faultEnv, set in the environment of a CLI process started by a test,
// makes its pool's store fail like a full disk after that many writes
// (storetest.Faulty).
const faultEnv = "AGENTPOOL_TEST_STORE_FAULT_AFTER"

// faultyStoreFromEnv installs the faulty store of faultEnv, in a CLI
// process (TestMain).
func faultyStoreFromEnv() {
	v := os.Getenv(faultEnv)
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(faultEnv + ": " + err.Error())
	}
	testStoreWrapper = func(st session.Store) session.Store {
		f := storetest.NewFaulty(st)
		f.FailAfter(n)
		return f
	}
}

// bigAnswer is the answer of the disk-full runs: 800 KiB, so that its
// events (and the message that repeats them) do not fit in what is left of
// the disk, ending with a mark, while the manifest that holds it stays
// under the 1 MiB bound of a manifest file. The scripted model streams a
// word per delta: 200 deltas of 4 KiB.
var bigAnswer = strings.Repeat(strings.Repeat("x", 4<<10)+" ", 200) + "THE END"

// bigAnswerProject writes a project whose agent writer answers bigAnswer,
// and whose agent short answers "ok".
func bigAnswerProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"agentpool.yaml": `agents:
  short:
    model: {type: scripted, turns: ["ok"]}
  writer:
    model: {type: scripted, delay: 1ms, max_response_bytes: 8000000, turns: ["` + bigAnswer + `"]}
`})
	return dir
}

var summarySession = regexp.MustCompile(`session (ses_\w+) · error`)

// checkDiskFullRun checks what a run whose store filled up tells its user:
// exit 1, "run failed: store NAME: CAUSE" on stderr, the whole answer on
// stdout, the session named failed in the summary; it returns the session.
func checkDiskFullRun(t *testing.T, r cliResult, store, cause string) string {
	t.Helper()
	want := "agentpool: run failed: store " + store + ": " + cause
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("exit %d, stderr %q; want exit 1 and %q", r.code, tail(r.stderr, 2000), want)
	}
	if !strings.Contains(r.stdout, "THE END") {
		t.Errorf("the answer is not on stdout (%d bytes)", len(r.stdout))
	}
	m := summarySession.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no summary line saying the session failed in %q", tail(r.stderr, 2000))
	}
	return m[1]
}

// checkNotRunning opens the database as the next process does and checks
// that the session reads failed or interrupted, never running (nor
// completed). A session the store never got is not running either: the
// run's first commit, which creates it, did not fit (the model's delay
// keeps that commit small, so it is rare) and the process ended before
// there was room to store it failed.
func checkNotRunning(t *testing.T, db, sid string) {
	t.Helper()
	st, err := sqlite.Open(db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.GetSession(context.Background(), sid)
	if errors.Is(err, session.ErrNotFound) {
		t.Logf("nothing of session %s was stored: its first commit did not fit", sid)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != session.StatusError && rec.Status != session.StatusInterrupted {
		t.Errorf("session %s reads %s once the disk has room, want error or interrupted", sid, rec.Status)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// TestDiskFullDuringRun: `agentpool run` on a SQLite database whose file
// system fills up during the run fails loudly (exit 1, the store and
// SQLite's cause on stderr) and still prints the answer; once the disk
// has room again the session reads failed or interrupted, never running.
// Where no file system can be mounted, a store that fails like a full
// disk stands in (and the test says so).
func TestDiskFullDuringRun(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := bigAnswerProject(t)
	disk, err := tinyfs.Mount(t, 8<<20)
	if err != nil {
		t.Logf("no disk to fill (%v): a store that fails like a full disk stands in", err)
		diskFullFaultyStore(t, dir)
		return
	}
	db := filepath.Join(disk, "agentpool.db")
	if r := runCLI(t, dir, "run", "--db", db, "--agent", "short", "go"); r.code != 0 {
		t.Fatalf("the run on an empty disk: exit %d: %s", r.code, tail(r.stderr, 2000))
	}
	filler := tinyfs.Fill(t, disk, 256<<10)
	r := runCLI(t, dir, "run", "--db", db, "--agent", "writer", "go")
	sid := checkDiskFullRun(t, r, "sqlite "+db, "database or disk is full")
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	checkNotRunning(t, db, sid)
}

// TestDiskFullDuringRunFaultyStore: the same through a store that fails
// like a full disk after a few writes, the way every front end's store can
// fail (a PostgreSQL server out of space answers each write with its
// error).
func TestDiskFullDuringRunFaultyStore(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	diskFullFaultyStore(t, bigAnswerProject(t))
}

func diskFullFaultyStore(t *testing.T, dir string) {
	db := filepath.Join(t.TempDir(), "agentpool.db")
	r := runCLIEnv(t, dir, []string{faultEnv + "=3"}, "run", "--db", db, "--agent", "writer", "go")
	sid := checkDiskFullRun(t, r, "faulty store", "no space left on device")
	checkNotRunning(t, db, sid)
}
