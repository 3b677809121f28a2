package durable

import (
	"context"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// A cancelled child's model turn whose attempt the server timed out (its
// heartbeats late, as under heavy load) stores nothing once its stream
// ends: its session's end was written when the timeout reached the
// workflow, and nothing of the session may follow it.
//
// The order is forced: the worker never heartbeats (HeartbeatEvery past
// the 10 s heartbeat timeout), so the server times the cancelled turn
// out and the child's workflow, waiting for it, writes its end; the fake
// model holds the turn's stream until the whole run has ended, then lets
// it finish, and the worker is stopped once the turn has returned.
// Before the turn asked the server whether its attempt was still
// current, it stored its message and part events after the child's
// run_error and its parent's spawn_session_end (the failure of
// TestCancelRootCancelsTree under load).
func TestCancelledTurnPastItsHeartbeatTimeoutWritesNothing(t *testing.T) {
	t.Parallel() // its own dev server and store; mostly waits on the heartbeat timeout
	addr := startDevServer(t)
	api := newFakeAPI(t, 10*time.Millisecond)
	api.hold = make(chan struct{})
	db := testDB(t)
	st := openTestDB(t, db)
	w := startWorker(t, workerConfig{Address: addr, DB: db, BaseURL: api.URL + "/v1", Key: "key-0", HeartbeatEvery: time.Hour})
	p, err := e2ePool(api.URL+"/v1", "key-client", st)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialTest(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-api.midStream
		cancel()
	}()
	node, _ := p.Node("boss")
	root, out, err := RunRoot(ctx, c, st, RootRequest{Node: node, Prompt: "What is 6*7?", TaskQueue: testQueue}, event.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != event.StopAborted {
		t.Errorf("root ended %s, want aborted", out.StopReason)
	}
	// The tree has ended; the turn's Go code has not: let its stream end,
	// and the worker stop once the turn has returned (a worker's stop
	// waits for its running activities).
	close(api.hold)
	api.Close() // waits for the stream's handler
	var streamed bool
	for _, call := range api.calls() {
		streamed = streamed || (call.model == "worker" && call.completed)
	}
	if !streamed {
		t.Fatal("the worker's stream did not end")
	}
	w.stop(t)

	stored, err := session.ReplayTree(context.Background(), st, root)
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]event.Event, len(stored))
	for i, r := range stored {
		evs[i] = r.Event
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Errorf("stored tree's invariants: %v", err)
	}
	all, err := session.Subtree(context.Background(), st, root)
	if err != nil || len(all) != 2 {
		t.Fatalf("subtree: %d sessions, %v", len(all), err)
	}
	for _, s := range all {
		if s.Status != session.StatusAborted {
			t.Errorf("session %s (%s) is %s, want aborted", s.ID, s.AgentName, s.Status)
		}
		if s.ParentID == "" {
			continue
		}
		msgs, err := st.Messages(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Role == model.RoleAssistant {
				t.Errorf("the cancelled child's conversation has the timed-out turn's answer %q", m.Text())
			}
		}
	}
}
