package durable

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/team"
)

// A parallel team's member runs its model turns as local activities
// and its parent writes its end (SessionInput.TurnLocal): its workflow
// schedules no activity and records no end. A person's message that
// comes while the member's turn runs (in the member's one workflow task)
// is read: the server refuses that task's end, the task done again finds
// the turn stored and answers the message in a second turn, and the
// member's log and record end once, after both.
func TestTeamMemberTurnIsLocalAndReadsAMessage(t *testing.T) {
	t.Parallel()
	addr := startDevServer(t)
	st := openTestDB(t, testDB(t))
	asked := make(chan string, 1) // the member's session, at its first turn
	messaged := make(chan struct{})
	var mu sync.Mutex
	var requests []string
	member := fnModel{"member", func(ctx context.Context, req *model.Request) (string, [][2]string) {
		last := req.Messages[len(req.Messages)-1].Text()
		mu.Lock()
		requests = append(requests, last)
		mu.Unlock()
		if len(req.Messages) == 1 {
			asked <- ""
			select {
			case <-messaged:
			case <-ctx.Done():
			}
			return "first answer", nil
		}
		return "then: " + last, nil
	}}
	p := oneMemberTeam(t, st, member)
	c := dialTest(t, addr)
	const queue = "agentpool-turn-local"
	startLocalWorker(t, c, queue, p, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sink, got := eventtest.Collect()
	node, _ := p.Node("crew")
	done := runRootAsync(ctx, c, st, RootRequest{Node: node, Prompt: "go", TaskQueue: queue}, sink)
	select {
	case <-asked:
	case r := <-done:
		t.Fatalf("the run ended before the member's turn: %+v, %v", r.out, r.err)
	}
	var memberID string
	for _, e := range got() {
		if s, ok := e.(event.SpawnSessionStart); ok {
			memberID = s.ChildSessionID
		}
	}
	if memberID == "" {
		t.Fatal("no spawn_session_start of the member before its turn")
	}
	if err := MessageSession(ctx, c, memberID, "opencode", "one more thing"); err != nil {
		t.Fatal(err)
	}
	close(messaged)
	r := <-done
	if r.err != nil || r.out.StopReason != event.StopCompleted {
		t.Fatalf("run: %+v, %v", r.out, r.err)
	}
	if err := eventtest.CheckInvariants(r.root, got()); err != nil {
		t.Errorf("invariants: %v", err)
	}
	mu.Lock()
	if len(requests) != 2 || !strings.Contains(requests[1], "one more thing") {
		t.Errorf("the member's model was asked %q, want the prompt, then the message", requests)
	}
	mu.Unlock()
	msgs, err := st.Messages(ctx, memberID)
	if err != nil || len(msgs) == 0 || !strings.Contains(msgs[len(msgs)-1].Message.Text(), "then: ") {
		t.Errorf("the member's stored conversation ends %v (%v), want its answer to the message", msgs, err)
	}
	it := c.GetWorkflowHistory(ctx, memberID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var markers int
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			t.Errorf("the member's workflow scheduled an activity (%s): its turns are local", ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			markers++
		}
	}
	if markers != 2 {
		t.Errorf("%d markers in the member's history, want the two turns'", markers)
	}
	sess, err := st.GetSession(ctx, memberID)
	if err != nil || sess.Status != session.StatusCompleted {
		t.Errorf("the member's stored session: %s, %v", sess.Status, err)
	}
}

// A cancel of a team whose member's turn (a local activity) is running
// reaches the member's model call without waiting for the SDK to end the
// member's workflow task to keep it alive (watchCancel): the member's
// history has no task completed before the cancel request. The model is
// called once (the cancelled turn is not retried), and the member and
// the team end aborted.
func TestCancelReachesATeamMemberTurn(t *testing.T) {
	t.Parallel()
	addr := startDevServer(t)
	st := openTestDB(t, testDB(t))
	asked := make(chan string, 1)
	var mu sync.Mutex
	calls := 0
	member := fnModel{"member", func(ctx context.Context, req *model.Request) (string, [][2]string) {
		mu.Lock()
		calls++
		mu.Unlock()
		select {
		case asked <- "":
		default:
		}
		<-ctx.Done()
		return "too late", nil
	}}
	p := oneMemberTeam(t, st, member)
	c := dialTest(t, addr)
	const queue = "agentpool-turn-local-cancel"
	startLocalWorker(t, c, queue, p, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink, got := eventtest.Collect()
	node, _ := p.Node("crew")
	done := runRootAsync(ctx, c, st, RootRequest{Node: node, Prompt: "go", TaskQueue: queue}, sink)
	<-asked
	cancel()
	r := <-done
	if r.out.StopReason != event.StopAborted {
		t.Fatalf("the team ended %s (%v), want aborted", r.out.StopReason, r.err)
	}
	var memberID string
	for _, e := range got() {
		if s, ok := e.(event.SpawnSessionStart); ok {
			memberID = s.ChildSessionID
		}
	}
	if err := eventtest.CheckInvariants(r.root, got()); err != nil {
		t.Errorf("invariants: %v", err)
	}
	mu.Lock()
	if calls != 1 {
		t.Errorf("the member's model was called %d times, want once", calls)
	}
	mu.Unlock()
	hctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if sess, err := st.GetSession(hctx, memberID); err != nil || sess.Status != session.StatusAborted {
		t.Errorf("the member's stored session: %s, %v", sess.Status, err)
	}
	it := c.GetWorkflowHistory(hctx, memberID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var seen []string
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev.GetEventType().String())
		if ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED {
			break
		}
	}
	for _, s := range seen {
		if s == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED.String() {
			t.Errorf("a workflow task of the member completed before its cancel request (the cancel waited for the SDK to keep the task alive): %v", seen)
			break
		}
	}
}

// oneMemberTeam is a pool whose default node is a parallel team of one
// member, agent "member" on m.
func oneMemberTeam(t *testing.T, st session.Store, m model.Model) *pool.Pool {
	t.Helper()
	p, err := pool.Build(pool.Config{
		Agents:  []pool.AgentSpec{{Name: "member", Model: m}},
		Teams:   []pool.TeamSpec{{Name: "crew", Mode: team.Parallel, Members: []string{"member"}}},
		Default: "crew",
	}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}
