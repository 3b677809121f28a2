package treeview

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/event"
)

var update = flag.Bool("update", false, "rewrite the golden frames")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// golden compares a frame with testdata/NAME.golden.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got+"\n" != string(want) {
		t.Errorf("frame %s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

// stream builds the events of one root stream: the root's own events
// plain, a descendant's wrapped in subagent events.
type stream struct {
	parents map[string]string // session → parent
	depth   map[string]int
}

func newStream() *stream {
	return &stream{parents: map[string]string{"root": ""}, depth: map[string]int{"root": 0}}
}

// of returns e as session id produced it, as the root's stream carries it.
func (s *stream) of(id string, e event.Event) event.Event {
	if id == "root" {
		return e
	}
	return event.Subagent{ChildSessionID: id, ParentSessionID: s.parents[id], Depth: s.depth[id], Event: e}
}

func (s *stream) spawn(parent, child, name string, mech event.Mechanism, st event.SourceType) event.Event {
	s.parents[child], s.depth[child] = parent, s.depth[parent]+1
	return s.of(parent, event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: parent,
		SpawnMechanism: mech, RunMode: event.RunModeSync, SourceName: name, SourceType: st, Depth: s.depth[child]})
}

func (s *stream) end(child string, stop event.StopReason, tokens int64, ms int64, errText string) event.Event {
	var u *event.Usage
	if tokens > 0 {
		u = &event.Usage{InputTokens: tokens / 2, OutputTokens: tokens - tokens/2}
	}
	return s.of(s.parents[child], event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: s.parents[child],
		StopReason: stop, Usage: u, DurationMS: ms, Error: errText})
}

func (s *stream) tool(id, call, name string) event.Event {
	return s.of(id, event.ToolCallStart{ToolCallID: call, ToolName: name, Title: name})
}

func (s *stream) toolDone(id, call, name string) event.Event {
	return s.of(id, event.ToolCallComplete{ToolCallID: call, ToolName: name})
}

func (s *stream) text(id, delta string) event.Event {
	return s.of(id, event.PartDelta{Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: delta}})
}

func (s *stream) thinking(id string) event.Event {
	return s.of(id, event.PartStart{Part: event.Part{PartKind: event.PartThinking}})
}

func (s *stream) complete(id string, tokens int64) event.Event {
	return s.of(id, event.StreamComplete{Message: event.Message{Usage: event.Usage{InputTokens: tokens}}})
}

// nested is a run: lead --task--> squad (parallel team) whose members
// scout (calling worker checker) and writer run side by side.
func nested(m *Model) *stream {
	s := newStream()
	evs := []event.Event{
		event.RunStarted{SessionID: "root", AgentName: "lead"},
		s.thinking("root"),
		s.tool("root", "c1", "task"),
		s.spawn("root", "squad", "squad", event.MechanismTask, event.SourceTeamParallel),
		s.spawn("squad", "scout", "scout", event.MechanismSpawn, event.SourceAgent),
		s.spawn("squad", "writer", "writer", event.MechanismSpawn, event.SourceAgent),
		s.tool("scout", "c2", "ask_checker"),
		s.spawn("scout", "checker", "checker", event.MechanismWorker, event.SourceAgent),
		s.thinking("checker"),
		s.text("writer", "Draft"),
	}
	for i, e := range evs {
		m.Apply(e, at(i*100))
	}
	return s
}

func TestNestedRunFrames(t *testing.T) {
	m := New(t0)
	s := nested(m)
	golden(t, "nested_running", m.Render(Options{Now: at(2500), Frame: 3}))

	// The checker ends: the worker collapses into one line under scout.
	m.Apply(s.complete("checker", 120), at(2600))
	m.Apply(s.end("checker", event.StopCompleted, 120, 900, ""), at(2600))
	m.Apply(s.toolDone("scout", "c2", "ask_checker"), at(2700))
	golden(t, "nested_worker_done", m.Render(Options{Now: at(3000), Frame: 4}))

	// Everything ends; the final frame shows the root's children collapsed.
	m.Apply(s.end("scout", event.StopCompleted, 400, 2000, ""), at(3100))
	m.Apply(s.end("writer", event.StopCompleted, 300, 2100, ""), at(3200))
	m.Apply(s.end("squad", event.StopCompleted, 700, 2900, ""), at(3300))
	m.Apply(s.toolDone("root", "c1", "task"), at(3300))
	m.Apply(s.text("root", "The squad found it.\nAll checked."), at(3400))
	golden(t, "nested_answer", m.Render(Options{Now: at(3500), Frame: 5, AnswerLines: 6}))
	m.Finish(Summary{SessionID: "root", Stop: event.StopCompleted, Usage: event.Usage{InputTokens: 600, OutputTokens: 400}, Cost: 0.0123}, at(4000))
	golden(t, "nested_final", m.Render(Options{Now: at(4000), AnswerLines: 6}))
	golden(t, "nested_expanded", m.Render(Options{Now: at(4000), Expand: true, IDs: true}))

	// Whole (the live tree's final frame): every session when they fit,
	// folded when they do not.
	golden(t, "nested_whole", m.Render(Options{Now: at(4000), AnswerLines: 6, Whole: true, Height: 6}))
	if got, want := m.Render(Options{Now: at(4000), Whole: true, Height: 4}), m.Render(Options{Now: at(4000)}); got != want {
		t.Errorf("a whole tree taller than the screen is not folded:\n%s\nwant\n%s", got, want)
	}
}

// Whole changes nothing while the run goes on.
func TestWholeOnlyWhenFinished(t *testing.T) {
	m := New(t0)
	nested(m)
	o := Options{Now: at(2500), Frame: 3}
	want := m.Render(o)
	o.Whole = true
	if got := m.Render(o); got != want {
		t.Errorf("running, with Whole:\n%s\nwant\n%s", got, want)
	}
}

func TestAbortedChild(t *testing.T) {
	m := New(t0)
	s := nested(m)
	m.Apply(s.end("checker", event.StopAborted, 0, 1500, "cancelled by the user"), at(2000))
	m.Apply(s.end("scout", event.StopAborted, 0, 1800, ""), at(2000))
	m.Apply(s.end("writer", event.StopAborted, 0, 1900, ""), at(2000))
	m.Apply(s.end("squad", event.StopAborted, 0, 1950, ""), at(2000))
	m.Finish(Summary{SessionID: "root", Stop: event.StopAborted}, at(2100))
	got := m.Render(Options{Now: at(2100), Expand: true})
	golden(t, "aborted", got)
	if strings.Contains(got, spinner[0]) || strings.Count(got, "⊘") != 5 {
		t.Errorf("an aborted run shows every session aborted, nothing running:\n%s", got)
	}
}

// TestFinishAbortsOpenSessions: a stream cut short (Ctrl-C before the
// ends arrived) still draws no session as running.
func TestFinishAbortsOpenSessions(t *testing.T) {
	m := New(t0)
	nested(m)
	m.Finish(Summary{SessionID: "root", Stop: event.StopAborted}, at(3000))
	got := m.Render(Options{Now: at(3000), Expand: true})
	for _, sp := range spinner {
		if strings.Contains(got, sp) {
			t.Fatalf("a session still spins after Finish:\n%s", got)
		}
	}
	if !strings.Contains(got, "⊘ squad [team] · aborted") {
		t.Errorf("squad is not aborted:\n%s", got)
	}
}

func TestLargeTeamSummarised(t *testing.T) {
	m := New(t0)
	s := newStream()
	m.Apply(event.RunStarted{SessionID: "root", AgentName: "lead"}, t0)
	m.Apply(s.tool("root", "c1", "task"), t0)
	m.Apply(s.spawn("root", "army", "army", event.MechanismTask, event.SourceTeamParallel), t0)
	const members = 2000
	for i := range members {
		id := fmt.Sprintf("m%04d", i)
		m.Apply(s.spawn("army", id, fmt.Sprintf("member-%d", i), event.MechanismSpawn, event.SourceAgent), at(i))
	}
	for i := range members - 60 {
		id := fmt.Sprintf("m%04d", i)
		stop, errText := event.StopCompleted, ""
		if i%700 == 5 {
			stop, errText = event.StopError, "provider exploded"
		}
		m.Apply(s.end(id, stop, 10, 1000, errText), at(3000+i))
	}
	m.Apply(s.tool("m1941", "t1", "Bash"), at(6000))
	got := m.Render(Options{Now: at(7000), Frame: 1, Width: 100})
	golden(t, "team_2000", got)
	if n := strings.Count(got, "\n") + 1; n > 20 {
		t.Errorf("a 2,000-member team takes %d lines, want a screenful", n)
	}
	if !strings.Contains(got, "1,940 of 2,000 members done, 3 failed") {
		t.Errorf("no count of the fan-out:\n%s", got)
	}
}

func TestThousandsAndDuration(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 123456: "123,456", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{400 * time.Millisecond: "400ms", 1500 * time.Millisecond: "1.5s", 75 * time.Second: "1m15s", 62 * time.Minute: "1h02m"} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestWidthCutsLines(t *testing.T) {
	m := New(t0)
	nested(m)
	for _, l := range strings.Split(m.Render(Options{Now: at(2500), Width: 30, Color: true}), "\n") {
		if w := len([]rune(stripANSI(l))); w > 30 {
			t.Errorf("line of %d cells in a 30-cell frame: %q", w, l)
		}
	}
}

// stripANSI drops CSI sequences.
func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			i += 2
			for i < len(s) && (s[i] < 0x40 || s[i] > 0x7e) {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestHeightCapsFrame: a frame never grows past the terminal's height
// (an inline frame taller than the screen cannot be redrawn); the tree
// keeps its top and says how much is left out, the answer its end.
func TestHeightCapsFrame(t *testing.T) {
	m := New(t0)
	s := nested(m)
	m.Apply(s.text("root", "one\ntwo\nthree\nfour"), at(1000))
	full := m.Render(Options{Now: at(2000), AnswerLines: 6})
	if n := strings.Count(full, "\n") + 1; n != 5+1+4 {
		t.Fatalf("uncapped frame has %d lines:\n%s", n, full)
	}
	got := m.Render(Options{Now: at(2000), AnswerLines: 6, Height: 6})
	want := "⠋ lead · 2.0s · writing\n" +
		"└─ ⠋ squad [team] · 1.7s · waiting on 2 members\n" +
		"   ├─ ⠋ scout [member] · 1.6s · calling ask_checker\n" +
		"… 2 more lines\n" +
		"\n" +
		"four"
	if got != want {
		t.Errorf("capped frame:\n%s\nwant:\n%s", got, want)
	}
}

// TestAnswerWrapped: a long answer line is wrapped to the width, and only
// its last lines are shown.
func TestAnswerWrapped(t *testing.T) {
	m := New(t0)
	m.Apply(event.RunStarted{SessionID: "root", AgentName: "solo"}, t0)
	m.Apply(event.PartDelta{Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "aaaa bbbb cccc dddd eeee"}}, t0)
	got := m.Render(Options{Now: at(100), Width: 10, AnswerLines: 2})
	if !strings.HasSuffix(got, "\n\ncccc dddd\neeee") {
		t.Errorf("answer not wrapped to its last lines:\n%q", got)
	}
	if strings.Contains(got, "aaaa") {
		t.Errorf("earlier wrapped lines shown:\n%s", got)
	}
}
