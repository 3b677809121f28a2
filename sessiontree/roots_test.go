package sessiontree

// Tests that root runs share no lock of the Projection on the event path
// (issue 32): a run whose projection is held up does not hold up another.
// A regression makes these tests wait forever (go test's -timeout reports
// them, with the goroutines' stacks), since a mutex wait has no signal to
// assert on.

import (
	"context"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// slowStore holds GetSession of one session until gate closes, after
// telling entered.
type slowStore struct {
	*memory.Store
	slow    string
	entered chan struct{}
	gate    chan struct{}
}

func (s *slowStore) GetSession(ctx context.Context, id string) (session.Session, error) {
	if id == s.slow {
		close(s.entered)
		<-s.gate
	}
	return s.Store.GetSession(ctx, id)
}

// While the first event of run A waits for the store (under A's lock),
// run B's events are projected, its Changes published and its session
// read: the runs do not share the Projection's lock.
func TestSlowRootDoesNotHoldUpOtherRoots(t *testing.T) {
	ctx := context.Background()
	st := &slowStore{Store: memory.New(), slow: "ses_a", entered: make(chan struct{}), gate: make(chan struct{})}
	for _, id := range []string{"ses_a", "ses_b"} {
		if err := st.CreateSession(ctx, session.Session{ID: id, AgentName: "boss", Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	proj := NewProjection(st, nil)
	got := &changeLog{}
	defer proj.Subscribe(got.add)()

	done := make(chan struct{})
	go func() {
		defer close(done)
		proj.Observe(ctx, "ses_a", event.RunStarted{SessionID: "ses_a", RunID: "run_a"})
	}()
	<-st.entered // A's run is stuck in the store, its projection locked

	proj.Observe(ctx, "ses_b", event.RunStarted{SessionID: "ses_b", RunID: "run_b"})
	cs := proj.Apply(ctx, "ses_b", event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}})
	if len(cs) == 0 {
		t.Error("B's part_start made no Changes while A was held up")
	}
	if got.n("ses_b") == 0 {
		t.Error("B's subscribers got nothing while A was held up")
	}
	if s, ok := proj.Session("ses_b"); !ok || s.AgentName != "boss" {
		t.Errorf("Session(ses_b) while A was held up: %+v %v", s, ok)
	}

	close(st.gate)
	<-done
	if _, ok := proj.projected("ses_a"); !ok {
		t.Error("A is not projected once its store read returned")
	}
}
