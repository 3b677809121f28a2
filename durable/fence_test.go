package durable

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
)

// A turn's write in flight when its run ends goes first; after the end
// the run's turns write nothing; the fence forgets a run once its turns
// left; another run of the session is not fenced by that end.
func TestFenceKeepsTurnWritesBeforeTheEnd(t *testing.T) {
	var f turnFence
	k := runKey{"ses_1", "run_1"}
	r, leave := f.enter(k)
	writing, ended := make(chan struct{}), make(chan struct{})
	var order []string
	go func() {
		<-writing
		f.end(k)
		order = append(order, "end") // after the write: end waited for it
		close(ended)
	}()
	err := r.write(func() error {
		close(writing)
		order = append(order, "write")
		return nil
	})
	<-ended
	if err != nil || len(order) != 2 || order[0] != "write" {
		t.Fatalf("write in flight: %v, order %v", err, order)
	}
	wrote := false
	if err := r.write(func() error { wrote = true; return nil }); !errors.Is(err, errRunEnded) || wrote {
		t.Fatalf("a write after the end: %v (ran %v)", err, wrote)
	}
	other, leaveOther := f.enter(runKey{"ses_1", "run_2"})
	if err := other.write(func() error { return nil }); err != nil {
		t.Fatalf("the session's next run fenced by the last one's end: %v", err)
	}
	leaveOther()
	leave()
	if n := len(f.runs); n != 0 {
		t.Fatalf("%d runs kept after their turns left", n)
	}
	f.end(k) // a run without turns in flight: nothing to fence
	if n := len(f.runs); n != 0 {
		t.Fatalf("end kept %d runs", n)
	}
}

// A child's end journaled (endChild) goes with the next write, whole or
// in parts (takeUpTo: with the first part, ahead of the events journaled
// after it), and comes back when that write fails; the answer and the
// conversation do not ride along.
func TestJournalCarriesChildEnds(t *testing.T) {
	j := &journal{sid: "ses_team"}
	j.Emit(event.RunStarted{SessionID: "ses_team"})
	end := EndInput{Pending: Pending{SessionID: "ses_m", Events: []json.RawMessage{[]byte(`{"event_kind":"stream_complete"}`)}},
		Output: SessionOutput{Output: "long answer", Messages: []model.Message{model.UserText("hi")}, StopReason: event.StopCompleted}}
	j.endChild(end)
	j.Emit(event.SpawnSessionEnd{ChildSessionID: "ses_m"})
	if !j.pending() || j.pendingBytes() <= len(j.events[0])+len(j.events[1]) {
		t.Fatalf("the end is not counted as pending: %v, %d bytes", j.pending(), j.pendingBytes())
	}
	p := j.takeUpTo(1)
	if len(p.Ends) != 1 || len(p.Events) != 0 || p.Ends[0].Output.Output != "" || p.Ends[0].Output.Messages != nil {
		t.Fatalf("first part: %d ends, %d events, output %q", len(p.Ends), len(p.Events), p.Ends[0].Output.Output)
	}
	j.failed(p)
	p = j.take()
	if len(p.Ends) != 1 || len(p.Events) != 2 || !p.Check || j.pending() {
		t.Fatalf("after a failed write: %d ends, %d events, check %v, left %v", len(p.Ends), len(p.Events), p.Check, j.pending())
	}
	if (&Pending{Ends: p.Ends}).empty() {
		t.Fatal("a write of ends alone is empty")
	}

	// Ends past the limit go in parts of their own, one at least, and
	// the events after every end.
	j.endChild(end)
	j.endChild(end)
	j.Emit(event.SpawnSessionEnd{ChildSessionID: "ses_m"})
	var parts [][2]int
	for j.pending() {
		p := j.takeUpTo(40)
		parts = append(parts, [2]int{len(p.Ends), len(p.Events)})
	}
	if len(parts) != 3 || parts[0] != [2]int{1, 0} || parts[1] != [2]int{1, 0} || parts[2] != [2]int{0, 1} {
		t.Fatalf("parts (ends, events) at 40 bytes: %v", parts)
	}
}
