package eventtest_test

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
)

const (
	root = "ses_root"
	a    = "ses_a"
	b    = "ses_b"
	c    = "ses_c"
)

// wrapA wraps an event of a (depth 1) for the root stream.
func wrapA(e event.Event) event.Event {
	return event.Subagent{SourceName: "a", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: a, ParentSessionID: root, Path: []string{a}, Event: e}
}

// wrapB wraps an event of b (depth 2, child of a) for the root stream.
func wrapB(e event.Event) event.Event {
	return event.Subagent{SourceName: "b", SourceType: event.SourceAgent, Depth: 2, ChildSessionID: b, ParentSessionID: a, Path: []string{a, b}, Event: e}
}

func wrapC(e event.Event) event.Event {
	return event.Subagent{SourceName: "c", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: c, ParentSessionID: root, Path: []string{c}, Event: e}
}

func start(child, parent string, depth int) event.SpawnSessionStart {
	return event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: parent, SpawnMechanism: event.MechanismTask, RunMode: event.RunModeSync, SourceName: child, SourceType: event.SourceAgent, Depth: depth}
}

func end(child, parent string, depth int) event.SpawnSessionEnd {
	return event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: parent, SourceName: child, SourceType: event.SourceAgent, Depth: depth, StopReason: event.StopCompleted}
}

func done() event.Event {
	return event.StreamComplete{Message: event.Message{Role: "assistant", Content: "ok", FinishReason: "stop"}}
}

// valid is a root run: root spawns a (task), a spawns b (worker) while root
// spawns c; c's and b's events interleave.
func valid() []event.Event {
	return []event.Event{
		event.RunStarted{SessionID: root, RunID: "run_root", AgentName: "root"}, // 0
		event.ToolCallStart{ToolCallID: "cal_1", ToolName: "task"},              // 1
		start(a, root, 1), // 2
		start(c, root, 1), // 3
		wrapA(event.RunStarted{SessionID: a, RunID: "run_a", AgentName: "a", ParentSessionID: root}), // 4
		wrapC(event.RunStarted{SessionID: c, RunID: "run_c", AgentName: "c", ParentSessionID: root}), // 5
		wrapA(start(b, a, 2)), // 6
		wrapB(event.RunStarted{SessionID: b, RunID: "run_b", AgentName: "b", ParentSessionID: a}), // 7
		wrapC(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}),              // 8
		wrapB(event.Custom{EventType: "hook"}),                                                    // 9
		wrapB(done()),                                                                             // 10
		wrapC(done()),                                                                             // 11
		wrapA(end(b, a, 2)),                                                                       // 12
		end(c, root, 1),                                                                           // 13
		wrapA(done()),                                                                             // 14
		end(a, root, 1),                                                                           // 15
		event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "task"}, // 16
		done(), // 17
	}
}

func TestValid(t *testing.T) {
	if err := eventtest.CheckInvariants(root, valid()); err != nil {
		t.Fatal(err)
	}
	// A child that failed without a terminal event (a panic) is fine.
	evs := valid()
	evs = slices.Delete(evs, 14, 15)
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Fatal(err)
	}
	if err := eventtest.CheckInvariants(root, nil); err != nil {
		t.Fatalf("empty stream: %v", err)
	}
}

func TestBroken(t *testing.T) {
	type edit func([]event.Event) []event.Event
	set := func(i int, e event.Event) edit {
		return func(evs []event.Event) []event.Event { evs[i] = e; return evs }
	}
	del := func(i int) edit {
		return func(evs []event.Event) []event.Event { return slices.Delete(evs, i, i+1) }
	}
	ins := func(i int, e event.Event) edit {
		return func(evs []event.Event) []event.Event { return slices.Insert(evs, i, e) }
	}
	move := func(from, to int) edit {
		return func(evs []event.Event) []event.Event {
			e := evs[from]
			evs = slices.Delete(evs, from, from+1)
			return slices.Insert(evs, to, e)
		}
	}
	tests := []struct {
		name      string
		edit      edit
		invariant int
		index     int // the index of the first violation; -2 to skip
	}{
		{"start missing", del(2), 1, 3},
		{"start after the child's first event", move(2, 4), 1, 3},
		{"start in the wrong stream", set(6, start(b, a, 2)), 1, 6},
		{"start twice", ins(7, wrapA(start(b, a, 2))), 1, 7},
		{"end missing", del(15), 2, -1},
		{"grandchild end missing", del(12), 2, 14},
		{"end twice", ins(16, end(a, root, 1)), 2, 16},
		{"event after end", ins(13, wrapB(event.PartEnd{Index: 0})), 2, 13},
		{"end before the child's last event", move(13, 10), 2, 12},
		{"end of a never started child", ins(1, end("ses_x", root, 1)), 2, 1},
		{"end without stop reason", set(13, func() event.Event { e := end(c, root, 1); e.StopReason = ""; return e }()), 2, 13},
		{"start depth", set(2, start(a, root, 2)), 4, 2},
		{"wrapper depth", set(7, func() event.Event {
			w := wrapB(event.RunStarted{SessionID: b, RunID: "run_b", AgentName: "b", ParentSessionID: a}).(event.Subagent)
			w.Depth = 1
			return w
		}()), 4, 7},
		{"grandchild start depth", set(6, wrapA(start(b, a, 3))), 4, 6},
		{"end depth", set(13, end(c, root, 2)), 4, 13},
		{"double wrap", set(8, wrapC(wrapC(event.PartEnd{}))), 5, 8},
		{"wrong path", set(8, func() event.Event {
			w := wrapB(event.PartEnd{}).(event.Subagent)
			w.Path = []string{b}
			return w
		}()), 5, 8},
		{"wrong parent in wrapper", set(8, func() event.Event {
			w := wrapC(event.PartEnd{}).(event.Subagent)
			w.ParentSessionID = a
			return w
		}()), 5, 8},
		{"grandchild wrapped as the child", set(7, wrapA(event.RunStarted{SessionID: b, RunID: "run_b", AgentName: "b", ParentSessionID: a})), 5, -2},
		{"root event before run_started", move(0, 1), 6, 0},
		{"child event before run_started", move(5, 8), 6, 7},
		{"event after stream_complete", ins(18, event.PartEnd{Index: 0}), 6, 18},
		{"child event after its terminal event", ins(11, wrapB(event.PartEnd{Index: 0})), 6, 11},
		{"second run_started", ins(1, event.RunStarted{SessionID: root, RunID: "run_x"}), 6, 1},
		{"run id reused", set(5, wrapC(event.RunStarted{SessionID: c, RunID: "run_a", AgentName: "c", ParentSessionID: root})), 9, 5},
		{"session id reused under another parent", set(6, wrapA(start(c, a, 2))), 9, 6},
		{"root id reused", ins(1, start(root, root, 1)), 9, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs := tc.edit(valid())
			err := eventtest.CheckInvariants(root, evs)
			var ie *eventtest.Error
			if !errors.As(err, &ie) {
				t.Fatalf("CheckInvariants = %v, want an *Error", err)
			}
			if !ie.Has(tc.invariant) {
				t.Fatalf("violations do not include invariant %d:\n%v", tc.invariant, err)
			}
			first := ie.Violations[0]
			if tc.index != -2 && (first.Invariant != tc.invariant || first.Index != tc.index) {
				t.Fatalf("first violation = %v, want invariant %d at %d\n%v", first, tc.invariant, tc.index, err)
			}
			t.Log(err)
		})
	}
}

func TestCollect(t *testing.T) {
	sink, events := eventtest.Collect()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				sink.Emit(event.PartEnd{Index: g*100 + i})
			}
		})
	}
	wg.Wait()
	got := events()
	if len(got) != 800 {
		t.Fatalf("collected %d events, want 800", len(got))
	}
	got[0] = nil // a copy: the collector's own slice is unchanged
	if events()[0] == nil {
		t.Fatal("events() returned the collector's own slice")
	}
}
