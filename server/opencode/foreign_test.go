package opencode

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
	"github.com/agentpool/agentpool/session/sqlite"
)

// gateSink holds a run at the first event of a child (after it was
// stored) until open is closed.
type gateSink struct {
	once    sync.Once
	reached chan struct{}
	open    chan struct{}
}

func (g *gateSink) Emit(e event.Event) {
	if _, ok := e.(event.Subagent); ok {
		g.once.Do(func() {
			close(g.reached)
			<-g.open
		})
	}
}

// TestForeignRun: a run of another pool on the same SQLite file (as
// another process's) shows on this server as its own do: session.created
// and session.status busy on the event stream, listed by
// GET /session/status while it runs, its child's session created, then
// session.idle and no longer listed.
func TestForeignRun(t *testing.T) {
	noLeaks(t)
	db := filepath.Join(t.TempDir(), "db.sqlite")
	testForeignRun(t, func() session.Store {
		st, err := sqlite.Open(db, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// TestForeignRunOnNotices: the same on PostgreSQL, where the server
// follows the other process's run on the store's notices alone: it
// never polls (foreignPollEvery is an hour).
func TestForeignRunOnNotices(t *testing.T) {
	noLeaks(t)
	_, db := pgtest.Schema(t)
	d := foreignPollEvery
	t.Cleanup(func() { foreignPollEvery = d }) // after the server's loop ended
	foreignPollEvery = time.Hour
	testForeignRun(t, func() session.Store {
		st, err := postgres.Open(context.Background(), db, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

func testForeignRun(t *testing.T, openStore func() session.Store) {
	m, err := config.Parse("test.yaml", []byte(`
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: help, description: Helping}}]
        - "lead done"
    tools: [subagent]
  helper:
    model: {type: test, custom_output_text: "helped"}
`))
	if err != nil {
		t.Fatal(err)
	}
	open := func() *pool.Pool {
		st := openStore()
		p, err := pool.New(m, pool.Options{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(); st.Close() })
		return p
	}
	here, there := open(), open()
	_, base := newServer(t, here, Options{})
	ev := subscribe(t, base+"/event")

	g := &gateSink{reached: make(chan struct{}), open: make(chan struct{})}
	done := make(chan error, 1)
	var res pool.RunResult
	go func() {
		var err error
		res, err = there.RunSink(context.Background(), pool.RunRequest{Node: "lead", Prompt: "go"}, g)
		done <- err
	}()
	select {
	case <-g.reached:
	case err := <-done:
		close(g.open)
		t.Fatalf("the other run ended before its child: %v", err)
	}
	busy := ev.wait(func(e map[string]any) bool {
		return e["type"] == "session.status" && get(e, "properties", "status", "type") == "busy"
	}, 10*time.Second)
	root := str(get(busy, "properties", "sessionID"))
	if st := mustCall(t, 200, "GET", base+"/session/status", ""); get(st, root, "type") != "busy" {
		t.Errorf("GET /session/status while the other process's run runs: %v", st)
	}
	close(g.open)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.SessionID != root {
		t.Errorf("busy was published for %s, the run is %s", root, res.SessionID)
	}
	ev.wait(func(e map[string]any) bool {
		return e["type"] == "session.created" && get(e, "properties", "info", "parentID") == root
	}, 10*time.Second)
	ev.wait(func(e map[string]any) bool {
		return e["type"] == "session.idle" && get(e, "properties", "sessionID") == root
	}, 10*time.Second)
	if st := mustCall(t, 200, "GET", base+"/session/status", ""); len(st.(map[string]any)) != 0 {
		t.Errorf("GET /session/status after the run: %v", st)
	}
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+root+"/message", ""))
	if len(msgs) == 0 || get(arr(get(msgs[len(msgs)-1], "parts"))[1], "text") != "lead done" {
		t.Errorf("the other run's messages: %v", msgs)
	}
}
