package treeview

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/agentpool/agentpool/event"
)

// fakeClock is an injected clock: it moves only when the test says.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestLiveDrawsFinalFrame runs the bubbletea program on a buffer: the
// events sent in reach the model, and Finish leaves the final frame (the
// whole tree, as it fits the window; nothing spinning) and returns only once
// the program has stopped (goleak checks no goroutine is left).
func TestLiveDrawsFinalFrame(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{now: t0}
	l := Start(&out, clock.Now, tea.WithWindowSize(100, 40))
	s := newStream()
	for _, e := range []event.Event{
		event.RunStarted{SessionID: "root", AgentName: "lead"},
		s.tool("root", "c1", "task"),
		s.spawn("root", "squad", "squad", event.MechanismTask, event.SourceTeamParallel),
		s.spawn("squad", "scout", "scout", event.MechanismSpawn, event.SourceAgent),
		s.end("scout", event.StopCompleted, 40, 1200, ""),
		s.end("squad", event.StopError, 40, 1300, "member failed"),
	} {
		l.Emit(e)
		clock.add(100 * time.Millisecond)
	}
	clock.add(time.Second)
	if err := l.Finish(Summary{SessionID: "root", Stop: event.StopError, Err: "squad failed", Usage: event.Usage{InputTokens: 50, OutputTokens: 10}}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	final := "✗ lead"
	i := strings.LastIndex(got, final)
	if i < 0 {
		t.Fatalf("no final root line %q in the output:\n%q", final, got)
	}
	tail := stripANSI(got[i:])
	for _, want := range []string{"error", "1 tool use", "60 tok", "1.6s", "squad failed", "✗ squad [team]", "member failed"} {
		if !strings.Contains(tail, want) {
			t.Errorf("final frame lacks %q:\n%s", want, tail)
		}
	}
	// The whole tree fits in the window: the final frame shows it all.
	if !strings.Contains(tail, "└─ ✓ scout [member] · completed") {
		t.Errorf("the final frame of a tree that fits does not show a finished child's children:\n%s", tail)
	}
}

// TestLiveStopDrawsNothing: a run that never started leaves no tree.
func TestLiveStopDrawsNothing(t *testing.T) {
	var out bytes.Buffer
	l := Start(&out, nil)
	if err := l.Stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "run") {
		t.Errorf("a stopped tree left a frame: %q", out.String())
	}
}
