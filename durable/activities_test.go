package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// A write whose outcome the workflow could not learn is sent again with
// Check: what the first one wrote is not written twice, what it did not
// write is.
func TestWriteAgainWritesOnce(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_1", AgentName: "a", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	acts := &Activities{Store: st}
	env.RegisterActivityWithOptions(acts, activityOptions())
	evs := []json.RawMessage{encode(event.RunStarted{SessionID: "ses_1", RunID: "run_1", AgentName: "a"}), encode(event.PartEnd{Index: 0})}
	msgs := []session.Message{{ID: "msg_1", SessionID: "ses_1", CreatedAt: now, Message: model.UserText("hi")}}

	// The first attempt wrote the messages and the first event only.
	if err := st.AppendMessages(ctx, "ses_1", msgs...); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "ses_1", event.RunStarted{SessionID: "ses_1", RunID: "run_1", AgentName: "a"}); err != nil {
		t.Fatal(err)
	}
	p := Pending{SessionID: "ses_1", Events: evs, Messages: msgs, Check: true}
	for range 2 { // and once more: nothing changes
		v, err := env.ExecuteActivity(actWrite, p)
		if err != nil {
			t.Fatal(err)
		}
		var after int64
		if err := v.Get(&after); err != nil || after != 2 {
			t.Fatalf("after = %d, %v", after, err)
		}
	}
	recs, _ := st.Events(ctx, "ses_1", 0)
	if len(recs) != 2 || recs[1].Event.Kind() != event.KindPartEnd {
		t.Errorf("log = %d events", len(recs))
	}
	got, _ := st.Messages(ctx, "ses_1")
	if len(got) != 1 {
		t.Errorf("conversation = %d messages, want 1", len(got))
	}
}

// A turn that runs again after its first attempt stored its message is not
// sent to the model again (Lookup is nil: asking for the model would
// panic); its events are rebuilt from the message when the first attempt
// died before writing them, and not written twice when it did not.
func TestTurnAgainDoesNotCallTheModel(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_1", AgentName: "a", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	acts := &Activities{Store: st}
	answer := model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "42"}}}
	// The first attempt stored the message, and died.
	if err := st.AppendMessages(ctx, "ses_1", session.Message{ID: "msg_turn", SessionID: "ses_1", CreatedAt: now, Message: answer}); err != nil {
		t.Fatal(err)
	}
	in := TurnInput{Pending: Pending{SessionID: "ses_1"}, Agent: "a", MessageID: "msg_turn", CreatedAt: now}
	for i := range 2 {
		out, err := acts.turn(ctx, in, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.Turn.Message.Text() != "42" || !out.Turn.Stored || out.Turn.Finish != model.FinishStop || out.Events != 3 {
			t.Fatalf("attempt %d: %+v", i+2, out)
		}
	}
	recs, _ := st.Events(ctx, "ses_1", 0)
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, string(r.Event.Kind()))
	}
	if got := strings.Join(kinds, ","); got != "part_start,part_delta,part_end" {
		t.Errorf("log = %s", got)
	}
	if msgs, _ := st.Messages(ctx, "ses_1"); len(msgs) != 1 {
		t.Errorf("conversation = %d messages", len(msgs))
	}
}

// countingMetrics records what Activities.Metrics is told.
type countingMetrics struct{ started, ended []string }

func (m *countingMetrics) SessionStarted(_ context.Context, agent string, depth int) {
	m.started = append(m.started, fmt.Sprintf("%s@%d", agent, depth))
}

func (m *countingMetrics) SessionEnded(_ context.Context, agent string, stop event.StopReason, cost float64, d time.Duration) {
	m.ended = append(m.ended, fmt.Sprintf("%s %s %.2f %v", agent, stop, cost, d))
}

// The sessions' metrics under the engine: a child's start is counted by
// the activity that creates it, a session's end by the one that ends it,
// once each however often the activity runs.
func TestActivitiesCountSessions(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	if err := st.CreateSession(ctx, session.Session{ID: "ses_1", AgentName: "boss", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	m := &countingMetrics{}
	env.RegisterActivityWithOptions(&Activities{Store: st, Metrics: m}, activityOptions())
	child := session.Session{ID: "ses_2", ParentID: "ses_1", Depth: 1, AgentName: "worker", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	for range 2 { // a create sent again finds the session made
		if _, err := env.ExecuteActivity(actCreate, CreateInput{Pending: Pending{SessionID: "ses_1"}, Session: child}); err != nil {
			t.Fatal(err)
		}
	}
	end := EndInput{Pending: Pending{SessionID: "ses_2"}, Output: SessionOutput{StopReason: event.StopCompleted, Cost: 0.25, DurationMS: 1500}}
	if _, err := env.ExecuteActivity(actEnd, end); err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.started, ",") != "worker@1" || strings.Join(m.ended, ",") != "worker completed 0.25 1.5s" {
		t.Errorf("started %q, ended %q", m.started, m.ended)
	}
}

// A Create that finds a session made, its start in the log before the
// write's AfterSeq (a team's member that a lost workflow task created, the
// next run of the team's workflow starting it), writes the rest of what
// it carries but not that start again; a session it makes gets its start.
func TestCreateFindsAnEarlierStart(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	team := session.Session{ID: "ses_team", AgentName: "crew", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	lost := session.Session{ID: "ses_lost", ParentID: team.ID, Depth: 1, AgentName: "w1", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	fresh := lost
	fresh.ID, fresh.AgentName = "ses_fresh", "w2"
	startOf := func(s session.Session) event.SpawnSessionStart {
		return event.SpawnSessionStart{ChildSessionID: s.ID, ParentSessionID: team.ID, SourceName: s.AgentName, Depth: 1}
	}
	for _, s := range []session.Session{team, lost} {
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// The lost task's write: its start, then what came after it.
	if err := st.AppendEvents(ctx, team.ID, startOf(lost), event.SpawnSessionEnd{ChildSessionID: "ses_other", ParentSessionID: team.ID}); err != nil {
		t.Fatal(err)
	}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(&Activities{Store: st}, activityOptions())
	in := CreateInput{
		Pending: Pending{SessionID: team.ID, AfterSeq: 2, Check: true, Events: []json.RawMessage{
			encode(event.SpawnSessionEnd{ChildSessionID: "ses_third", ParentSessionID: team.ID}),
			encode(startOf(lost)), encode(startOf(fresh)),
		}},
		Session: lost, More: []session.Session{fresh},
	}
	if _, err := env.ExecuteActivity(actCreate, in); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Events(ctx, team.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		switch e := r.Event.(type) {
		case event.SpawnSessionStart:
			got = append(got, "start "+e.ChildSessionID)
		case event.SpawnSessionEnd:
			got = append(got, "end "+e.ChildSessionID)
		}
	}
	want := "start ses_lost,end ses_other,end ses_third,start ses_fresh"
	if strings.Join(got, ",") != want {
		t.Errorf("the team's log: %v, want %s", got, want)
	}
	if _, err := st.GetSession(ctx, fresh.ID); err != nil {
		t.Errorf("the new member: %v", err)
	}
}

// The End of a run that did not complete ends the children still stored
// running (created by a lost workflow task, never started), each with a
// spawn_session_end in the session's log before what the End writes; a
// child that ended keeps its end, and an End run again ends nothing twice.
func TestEndClosesStrays(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Now()
	boss := session.Session{ID: "ses_boss", AgentName: "boss", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	stray := session.Session{ID: "ses_stray", ParentID: boss.ID, Depth: 1, AgentName: "w1", Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	done := stray
	done.ID, done.AgentName, done.Status = "ses_done", "w2", session.StatusCompleted
	for _, s := range []session.Session{boss, stray, done} {
		if err := st.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(&Activities{Store: st}, activityOptions())
	in := EndInput{
		Pending:     Pending{SessionID: boss.ID, Events: []json.RawMessage{encode(event.RunError{Message: "cancelled", Code: "cancelled"})}},
		Output:      SessionOutput{StopReason: event.StopAborted},
		RunID:       "run_1",
		CloseStrays: true,
	}
	for range 2 {
		if _, err := env.ExecuteActivity(actEnd, in); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := st.Events(ctx, boss.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		switch e := r.Event.(type) {
		case event.SpawnSessionEnd:
			got = append(got, "end "+e.ChildSessionID+" "+string(e.StopReason))
		default:
			got = append(got, string(e.Kind()))
		}
	}
	if want := "end ses_stray aborted,run_error"; strings.Join(got, ",") != want {
		t.Errorf("the log: %v, want %s", got, want)
	}
	for id, want := range map[string]session.Status{stray.ID: session.StatusAborted, done.ID: session.StatusCompleted, boss.ID: session.StatusAborted} {
		s, err := st.GetSession(ctx, id)
		if err != nil || s.Status != want {
			t.Errorf("%s: %s, %v; want %s", id, s.Status, err, want)
		}
	}
}
