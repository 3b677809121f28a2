package durable

import (
	"context"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session/memory"
)

// max_spawns on the dev server, with two workers (each with its own
// connection to the shared store: PostgreSQL when AGENTPOOL_TEST_POSTGRES
// is set): the three parallel mids and their leaves make exactly
// max_spawns children, in the store too, and the rest are refused, as in
// this process.
func TestMaxSpawnsExactOnDevServer(t *testing.T) {
	t.Parallel() // its own dev server and store; mostly waits
	const maxSpawns = 4
	addr := startDevServer(t)
	db := testDB(t)
	c := dialTest(t, addr)
	var p *pool.Pool
	for range 2 {
		p = fanOutPool(t, openTestDB(t, db), maxSpawns)
		startLocalWorker(t, c, testQueue, p, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sink, got := eventtest.Collect()
	node, _ := p.Node("boss")
	root, out, err := RunRoot(ctx, c, p.Store(), RootRequest{Node: node, Prompt: "go", TaskQueue: testQueue}, sink)
	if err != nil || out.StopReason != event.StopCompleted {
		t.Fatalf("run: %+v, %v", out, err)
	}
	evs := got()
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Errorf("invariants: %v", err)
	}
	ref := memory.New()
	refSink, refGot := eventtest.Collect()
	res, err := fanOutPool(t, ref, maxSpawns).RunSink(context.Background(), pool.RunRequest{Node: "boss", Prompt: "go"}, refSink)
	if err != nil {
		t.Fatal(err)
	}
	s, r := countSpawns(root, evs)
	ws, wr := countSpawns(res.SessionID, refGot())
	if s != maxSpawns || r != 6-maxSpawns || s != ws || r != wr {
		t.Errorf("temporal: %d spawns, %d refused; in process: %d, %d; want %d and %d", s, r, ws, wr, maxSpawns, 6-maxSpawns)
	}
	if n := descendants(t, p.Store(), root); n != maxSpawns {
		t.Errorf("child sessions stored: %d, want %d", n, maxSpawns)
	}
}
