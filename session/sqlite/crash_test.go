package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/internal/soak"
	"github.com/agentpool/agentpool/internal/strictapi"
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
	more := make(chan struct{}, 1) // a token once events came since the last ACK
	go p.RunSink(context.Background(), pool.RunRequest{Prompt: "go"}, event.SinkFunc(func(e event.Event) {
		if rs, ok := e.(event.RunStarted); ok && count.Load() == 0 {
			root.Store(rs.SessionID)
		}
		// The recorder stored e before handing it on: counting here counts
		// events the store has accepted.
		count.Add(1)
		select {
		case more <- struct{}{}:
		default:
		}
	}))
	lost := time.After(2 * time.Minute) // never outlive a lost parent for long
	printedRoot := false
	for {
		select {
		case <-more:
		case <-lost:
			os.Exit(4)
		}
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
}

func TestKillDuringRun(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	// Kill in the middle: the run has children, and writes are going on.
	k := killHelper(t, path, func(root string, acked int64, acks int) bool {
		return root != "" && acked >= 1000 && acks >= 5
	}, nil)
	if k.root == "" || k.acked < 1000 {
		t.Fatalf("the helper stopped early: root %q, %d acknowledged events", k.root, k.acked)
	}
	st, tree, total := checkAfterKill(t, path, k)
	defer st.Close()
	if len(tree) < 3 {
		t.Errorf("only %d sessions were stored before the kill", len(tree))
	}
	t.Logf("killed after %d acknowledged events; %d readable; %d sessions, %d interrupted", k.acked, total, len(tree), len(st.Recovered()))
	// The store works on.
	ctx := context.Background()
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	resumeOnOpenAI(t, st, k.root)
}

// resumeOnOpenAI resumes root, whose run was killed in the middle of a
// delegation, with the boss agent on the OpenAI wire format: a Chat
// Completions server that rejects, as the real API does, an assistant
// tool_call without a tool message after it. The resume must be accepted
// and every delegation of the tree must still end in the log.
func resumeOnOpenAI(t *testing.T, st *sqlite.Store, root string) {
	t.Helper()
	srv := strictapi.OpenAI(t, "resumed after the crash")
	m, err := config.Parse("resume.yaml", fmt.Appendf(nil, `
default_agent: boss
agents:
  boss:
    model: {type: openai, model: gpt-strict, base_url: %q, api_key: sk-test}
    tools: [subagent]
  writer:
    model: {type: test}
  checker:
    model: {type: test}
teams:
  crew:
    mode: parallel
    members: [writer, checker]
`, srv.URL+"/v1"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Store: st, Registry: batteries.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.RunSink(context.Background(), pool.RunRequest{SessionID: root, Prompt: "go on"}, event.SinkFunc(func(event.Event) {}))
	if err != nil {
		t.Fatalf("resume after the kill: %v", err)
	}
	if rej := srv.Rejected(); len(rej) > 0 {
		t.Fatalf("the provider rejected the resumed conversation: %s", rej[0])
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "resumed after the crash" {
		t.Fatalf("resumed run: %s %q (%v)", res.Result.StopReason, res.Result.Output, res.Result.Err)
	}
	bodies := srv.Bodies()
	if len(bodies) != 1 {
		t.Fatalf("%d requests to the provider, want 1", len(bodies))
	}
	sent := fmt.Sprint(bodies[0]["messages"])
	if !strings.Contains(sent, "interrupted") {
		t.Errorf("the provider got no interrupted result for the cut delegation: %s", sent)
	}
	checkStartsEnd(t, st, root)
}

// TestKillRepeatedly kills the helper at random moments, again and again
// (6 times, 20 under make soak),
// on the same database: while it opens the store (and migrates the new
// file), before its run starts, and in the middle of its writes. After
// every kill the database passes integrity_check, reopens, recovers the
// dead run and holds every acknowledged event.
func TestKillRepeatedly(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	if testing.Short() {
		t.Skip("kills a helper process again and again")
	}
	// Each kind of kill (below) at least twice in the quick run; 20 kills
	// under make soak.
	kills := soak.Pick(6, 20)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	path := filepath.Join(t.TempDir(), "crash.db")
	midRun := 0
	for i := range kills {
		var k killed
		switch i % 3 {
		case 0:
			// At a random moment after the start: often while it opens
			// (and migrates) the store.
			delay := time.Duration(rng.Int64N(int64(400 * time.Millisecond)))
			k = killHelper(t, path, nil, func() <-chan time.Time { return time.After(delay) })
		case 1:
			// After a random number of acknowledgements.
			n := 1 + rng.IntN(40)
			k = killHelper(t, path, func(root string, _ int64, acks int) bool { return root != "" && acks >= n }, nil)
		default:
			// At a random moment once the run writes.
			delay := time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
			k = killHelper(t, path, func(root string, _ int64, acks int) bool { return root != "" && acks >= 1 },
				func() <-chan time.Time { return time.After(delay) })
		}
		st, tree, total := checkAfterKill(t, path, k)
		if k.root != "" && k.acked > 0 {
			midRun++
		}
		t.Logf("kill %d: %d acknowledged events, %d readable, %d sessions in the run", i+1, k.acked, total, len(tree))
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	if midRun < kills/2 {
		t.Errorf("only %d of %d kills landed in the middle of a run", midRun, kills)
	}
}

// killed is what the helper acknowledged before it was killed.
type killed struct {
	root  string // "" when it had not started its run
	acked int64  // events known to be committed
}

// killHelper starts the helper on path and SIGKILLs it as soon as enough
// (given the acknowledgements so far) holds, or, with at, when the channel
// at() makes fires (made at the start, or once enough holds when both are
// given).
func killHelper(t *testing.T, path string, enough func(root string, acked int64, acks int) bool, at func() <-chan time.Time) killed {
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
	guard := time.AfterFunc(90*time.Second, func() { cmd.Process.Kill() }) // never hang the test
	defer guard.Stop()

	var (
		mu    sync.Mutex
		k     killed
		fatal string
	)
	kill := make(chan struct{}, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		acks := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 2 {
				continue
			}
			mu.Lock()
			switch f[0] {
			case "ERR":
				fatal = sc.Text()
			case "ROOT":
				k.root = f[1]
			case "ACK":
				k.acked, _ = strconv.ParseInt(f[1], 10, 64)
				acks++
			}
			stop := fatal != "" || (enough != nil && enough(k.root, k.acked, acks))
			mu.Unlock()
			if stop {
				select {
				case kill <- struct{}{}:
				default:
				}
			}
		}
		io.Copy(io.Discard, out)
	}()
	var timer <-chan time.Time
	if at != nil && enough == nil {
		timer = at()
	}
	select {
	case <-kill:
		if at != nil {
			select {
			case <-at():
			case <-readDone:
			}
		}
	case <-timer:
	case <-readDone: // the helper died on its own
	}
	if err := cmd.Process.Signal(os.Kill); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	cmd.Wait()
	<-readDone
	mu.Lock()
	defer mu.Unlock()
	if fatal != "" {
		t.Fatalf("helper: %s", fatal)
	}
	return k
}

// checkAfterKill checks the database after a kill: integrity_check and the
// foreign keys are fine; it reopens; the killed run is recovered (no
// session of it is left running) and every acknowledged event is readable,
// each session's log numbered 1, 2, 3, ... It returns the open store, the
// run's sessions and how many events they hold.
func checkAfterKill(t *testing.T, path string, k killed) (*sqlite.Store, []session.Session, int64) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		var check string
		if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
			db.Close()
			t.Fatalf("integrity_check = %q, %v", check, err)
		}
		var fk int
		db.QueryRow(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&fk)
		if fk != 0 {
			t.Errorf("%d foreign key violations", fk)
		}
		// A child's create may commit with the writes after it, never
		// after them: no stored spawn_session_start names a child that is
		// not stored (as a child of the session whose log holds it).
		// (A kill while the helper opened a new file may leave it without
		// tables: the migration had not committed.)
		var starts, dangling, tables int
		if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'events'`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables > 0 {
			if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(NOT EXISTS (SELECT 1 FROM sessions c
				WHERE c.id = json_extract(e.data, '$.child_session_id') AND c.parent_id = p.id)), 0)
			FROM events e JOIN sessions p ON p.pk = e.session_pk
			WHERE e.kind = 'spawn_session_start'`).Scan(&starts, &dangling); err != nil {
				t.Fatal(err)
			}
		}
		if dangling != 0 {
			t.Errorf("%d of %d spawn_session_start events name a child session that is not stored", dangling, starts)
		}
		if k.acked >= 1000 && starts == 0 {
			t.Errorf("no spawn_session_start stored after %d acknowledged events", k.acked)
		}
		db.Close()
	}

	// Reopening recovers the dead run and keeps every acknowledged event.
	st, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	if k.root == "" {
		return st, nil, 0
	}
	ctx := context.Background()
	recovered := map[string]bool{}
	for _, id := range st.Recovered() {
		recovered[id] = true
	}
	if !recovered[k.root] {
		t.Errorf("root %s not recovered (recovered: %v)", k.root, st.Recovered())
	}
	tree, err := session.Subtree(ctx, st, k.root)
	if err != nil {
		t.Fatal(err)
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
	if total < k.acked {
		t.Errorf("%d events readable, %d were acknowledged before the kill", total, k.acked)
	}
	// Replays show every delegation of the killed run ending.
	checkStartsEnd(t, st, k.root)
	if rs, err := session.ReplayTree(ctx, st, k.root); err != nil {
		t.Fatal(err)
	} else {
		evs := make([]event.Event, len(rs))
		for i, r := range rs {
			evs[i] = r.Event
		}
		if err := eventtest.CheckInvariants(k.root, evs); err != nil {
			t.Errorf("replay of the killed run: %v", err)
		}
	}
	return st, tree, total
}
