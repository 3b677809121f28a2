package durable

import (
	"context"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
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
	api := newFakeAPI(t, 10*time.Millisecond)
	api.hold = make(chan struct{})
	st, w, p, c := startE2E(t, api, workerConfig{HeartbeatEvery: time.Hour})
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

	checkStoredTree(t, st, root)
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

// A run cancelled while the local activity that creates its child runs
// waits for it, then starts the child and cancels it: every session of
// the tree ends aborted and nothing of one follows its end. The cancel
// reaches the workflow once the task that runs the creation heartbeats
// (80% into its 10 s timeout): the creation is held until a workflow task
// after the cancel request completed. Before, the SDK let the cancelled
// creation go at once and the run ended while its code went on: the child
// it then created (a store write under way, which its caller's cancel does
// not stop) stayed running, never started.
func TestCancelDuringChildCreationEndsTheChild(t *testing.T) {
	t.Parallel() // its own dev server and store; mostly waits on the task's heartbeat
	api := newFakeAPI(t, 10*time.Millisecond)
	api.hold, api.held = make(chan struct{}), make(chan struct{}, 1)
	st, _, p, c := startE2E(t, api, workerConfig{HoldCreate: api.URL + "/hold"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ended struct {
		out SessionOutput
		err error
	}
	done := make(chan ended, 1)
	node, _ := p.Node("boss")
	root := id.Descending(id.Session)
	go func() {
		_, out, err := RunRoot(ctx, c, st, RootRequest{Node: node, Prompt: "What is 6*7?", TaskQueue: testQueue, SessionID: root}, event.Discard)
		done <- ended{out, err}
	}()
	select {
	case <-api.held:
	case e := <-done:
		t.Fatalf("the run ended before it created its child: %+v", e)
	}
	cancel()
	until(t, "a workflow task after the cancel request", func() bool {
		cancelled := false
		it := c.GetWorkflowHistory(context.Background(), root, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return false
			}
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
				cancelled = true
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if cancelled {
					return true
				}
			}
		}
		return false
	})
	close(api.hold)
	e := <-done
	if e.err != nil {
		t.Fatal(e.err)
	}
	if e.out.StopReason != event.StopAborted {
		t.Errorf("root ended %s, want aborted", e.out.StopReason)
	}
	// The creation goes on either way: the child is in the store.
	var kids []session.Session
	until(t, "the child session", func() bool {
		var err error
		kids, err = st.ListSessions(context.Background(), session.ListOptions{ParentID: root})
		return err == nil && len(kids) == 1
	})
	for _, s := range kids {
		if s.Status != session.StatusAborted {
			t.Errorf("child session %s (%s) is %s, want aborted", s.ID, s.AgentName, s.Status)
		}
	}
	checkStoredTree(t, st, root)
}

// until polls cond every 50 ms until it holds (a minute at most): a state
// of another process (the server's history, the store) to wait for.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(time.Minute)
	for !cond() {
		select {
		case <-tick.C:
		case <-giveUp:
			t.Fatalf("no %s after a minute", what)
		}
	}
}
