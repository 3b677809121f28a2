package sessiontree

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// runSubs is a per-run subscriber (SubscribeRuns): it counts the runs it
// was asked for and logs each run's Changes apart.
type runSubs struct {
	mu    sync.Mutex
	asked map[string]int
	log   changeLog
}

func (s *runSubs) run(owner string) func(string, []Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asked == nil {
		s.asked = map[string]int{}
	}
	s.asked[owner]++
	return func(o string, cs []Change) {
		if o != owner {
			panic("the function of run " + owner + " got Changes of " + o)
		}
		s.log.add(o, cs)
	}
}

func (s *runSubs) n(owner string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[owner]
}

// A per-run subscriber of a projection that a Processor feeds is asked
// once per run, also when it subscribes while the run goes on, and gets
// what a Subscribe subscriber gets; after unsubscribing it gets nothing.
// Fed by hand (Apply), it is asked at every event that changed something.
func TestSubscribeRuns(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	owners := []string{"ses_a", "ses_b"}
	for _, id := range owners {
		if err := st.CreateSession(ctx, session.Session{ID: id, Status: session.StatusRunning}); err != nil {
			t.Fatal(err)
		}
	}
	p := record.New(st, nil)
	proj := NewProjection(st, nil)
	var all changeLog
	defer proj.Subscribe(all.add)()
	early := &runSubs{}
	unsubEarly := proj.SubscribeRuns(early.run)
	defer p.Watch(proj)()
	runs := map[string]*record.Recorder{}
	for _, id := range owners {
		runs[id] = p.Open(ctx, id, nil)
		runs[id].Emit(event.RunStarted{SessionID: id, RunID: "run_" + id, AgentName: "boss"})
	}
	delta := func(text string) event.PartDelta {
		return event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: text}}
	}
	for _, id := range owners {
		runs[id].Emit(delta("one "))
	}
	late := &runSubs{}
	defer proj.SubscribeRuns(late.run)()
	for _, id := range owners {
		runs[id].Emit(delta("two "))
		runs[id].Emit(delta("three "))
	}
	for _, id := range owners {
		if early.n(id) != 1 || late.n(id) != 1 {
			t.Errorf("%s: asked %d and %d times, want once each", id, early.n(id), late.n(id))
		}
		if !reflect.DeepEqual(early.log.by[id], all.by[id]) {
			t.Errorf("%s: the per-run subscriber got %v, Subscribe's %v", id, early.log.by[id], all.by[id])
		}
		if late.log.n(id) != 2 || !reflect.DeepEqual(late.log.by[id], all.by[id][len(all.by[id])-2:]) {
			t.Errorf("%s: the late subscriber got %v", id, late.log.by[id])
		}
	}
	unsubEarly()
	got := early.log.n(owners[0])
	runs[owners[0]].Emit(delta("four "))
	if early.log.n(owners[0]) != got {
		t.Error("a per-run subscriber got Changes after it unsubscribed")
	}

	byHand := NewProjection(st, nil)
	hand := &runSubs{}
	defer byHand.SubscribeRuns(hand.run)()
	byHand.Apply(ctx, "ses_c", event.RunStarted{SessionID: "ses_c", RunID: "run_c", AgentName: "boss"})
	byHand.Apply(ctx, "ses_c", delta("one "))
	byHand.Apply(ctx, "ses_c", delta("two "))
	if hand.n("ses_c") != 3 || hand.log.n("ses_c") < 3 {
		t.Errorf("fed by hand: asked %d times for %d Changes, want once per event", hand.n("ses_c"), hand.log.n("ses_c"))
	}
}
