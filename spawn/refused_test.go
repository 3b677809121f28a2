package spawn_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// syncBuffer is a log destination safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// refusals returns the spawn_refused events of a root stream with the
// session that emitted each.
func refusals(root string, evs []event.Event) (out []event.Custom, by []string) {
	for _, p := range unwrapAll(root, evs) {
		if c, ok := p.ev.(event.Custom); ok && c.EventType == spawn.EventSpawnRefused {
			out = append(out, c)
			by = append(by, p.session)
		}
	}
	return out, by
}

// A spawn refused by max_depth is a spawn_refused event in the stream of
// the session that asked (between its tool call's start and completion),
// naming the node, the limit and the tool call, and a warning in the log.
func TestRefusedSpawnIsAnEvent(t *testing.T) {
	var logs syncBuffer
	p := mustPool(t, chainYAML, pool.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	res, evs := runPool(t, context.Background(), p, "a", "go")
	got, by := refusals(res.SessionID, evs)
	if len(got) != 1 {
		t.Fatalf("%d spawn_refused events, want 1: %+v", len(got), got)
	}
	c := sessionsNamed(t, p.Store(), "c")[0]
	d := got[0].EventData
	if by[0] != c.ID || d["node"] != "d" || d["limit"] != "max_depth" || d["max"] != 2 || d["depth"] != 3 ||
		d["mechanism"] != "task" || !strings.Contains(d["error"].(string), "depth limit reached (max_depth 2)") {
		t.Fatalf("spawn_refused by %s (c is %s): %+v", by[0], c.ID, d)
	}
	var callID string
	for _, tc := range toolCompletes(res.SessionID, evs, "task") {
		if tc.IsError {
			callID = tc.ToolCallID
		}
	}
	if callID == "" || d["tool_call_id"] != callID {
		t.Fatalf("tool_call_id %v, the refused task call is %q", d["tool_call_id"], callID)
	}
	if n := strings.Count(logs.String(), "depth limit reached"); n != 1 {
		t.Fatalf("depth warning logged %d times, want once:\n%s", n, logs.String())
	}
}

// A spawn refused by max_spawns is an event too, one per refused spawn.
func TestBudgetRefusalIsAnEvent(t *testing.T) {
	p := mustPool(t, `
agents:
  a:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: ask_b, args: {prompt: one}}, {name: ask_b, args: {prompt: two}}]
        - tool_calls: [{name: ask_b, args: {prompt: three}}]
        - a done
    workers: [b]
  b: {model: {type: test, custom_output_text: b out}}
limits: {max_spawns: 1}
`, pool.Options{})
	res, evs := runPool(t, context.Background(), p, "a", "go")
	got, by := refusals(res.SessionID, evs)
	if len(got) != 2 {
		t.Fatalf("%d spawn_refused events, want 2: %+v", len(got), got)
	}
	for i, c := range got {
		d := c.EventData
		if by[i] != res.SessionID || d["node"] != "b" || d["limit"] != "max_spawns" || d["max"] != 1 || d["mechanism"] != "worker" || d["tool_call_id"] == "" {
			t.Fatalf("spawn_refused %d by %s: %+v", i, by[i], d)
		}
	}
}

// A run that continues a child session counts depth from its tree's root;
// a refusal says so, with the session's depth.
func TestDepthRefusalNamesTheContinuedDepth(t *testing.T) {
	h := newHarness(t, spawn.Limits{MaxDepth: 3})
	leaf := h.agent("leaf", textModel("hi"))
	ctx := context.Background()
	// A chain of sessions down to depth 3, as an earlier run left it.
	parent := ""
	var sess session.Session
	for depth := range 4 {
		sess = session.Session{ID: id.Descending(id.Session), ParentID: parent, Depth: depth, AgentName: "deep", SourceType: event.SourceAgent, CreatedAt: time.Now()}
		if err := h.store.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		parent = sess.ID
	}
	sink, _ := eventtest.Collect()
	inv := mustRoot(t)(h.rt.NewRoot(sess, id.Ascending(id.Run), "", nil, sink))
	_, err := spawn.Spawn(ctx, inv, spawn.Request{Node: leaf, Prompt: "x"})
	h.rt.Release(inv)
	if !errors.Is(err, spawn.ErrDepthLimit) || !strings.Contains(err.Error(), "(max_depth 3)") ||
		!strings.Contains(err.Error(), "this run continues a session at depth 3 of its tree") {
		t.Fatalf("Spawn error = %v", err)
	}
}

// Reserve takes spawns of the run's budget all or none; spawns made with
// the reservation do not count again, and Release gives back the unused.
func TestReserve(t *testing.T) {
	h := newHarness(t, spawn.Limits{MaxSpawns: 3})
	leaf := h.agent("leaf", textModel("hi"))
	ctx := context.Background()
	now := time.Now()
	sess := session.Session{ID: id.Descending(id.Session), AgentName: "root", SourceType: event.SourceAgent, Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := h.store.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	sink, _ := eventtest.Collect()
	inv := mustRoot(t)(h.rt.NewRoot(sess, id.Ascending(id.Run), "", nil, sink))
	defer h.rt.Release(inv)
	spawnOne := func(r *spawn.Reservation) error {
		_, err := spawn.Spawn(ctx, inv, spawn.Request{Node: leaf, Prompt: "x", Reservation: r})
		return err
	}

	r, err := spawn.Reserve(ctx, inv, "pair", 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spawn.Reserve(ctx, inv, "pair2", 2); !errors.Is(err, spawn.ErrSpawnBudget) || !strings.Contains(err.Error(), "(max_spawns 3, 1 left)") {
		t.Fatalf("second reservation of 2 with 1 left: %v", err)
	}
	if err := spawnOne(r); err != nil { // from the reservation
		t.Fatal(err)
	}
	if err := spawnOne(nil); err != nil { // the one left
		t.Fatal(err)
	}
	if err := spawnOne(nil); !errors.Is(err, spawn.ErrSpawnBudget) {
		t.Fatalf("spawn past the budget: %v", err)
	}
	r.Release(ctx) // one reserved spawn was not used
	if err := spawnOne(nil); err != nil {
		t.Fatalf("spawn after the release: %v", err)
	}
	if err := spawnOne(r); !errors.Is(err, spawn.ErrSpawnBudget) {
		t.Fatalf("a released reservation still spawns: %v", err)
	}
}
