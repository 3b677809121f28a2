package treeview

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
)

// inject is text from a model, a tool or a store that tries to drive the
// terminal: an OSC 52 clipboard write, a screen erase, a cursor move, the
// C1 forms of CSI and OSC, and a carriage return and backspaces that
// would overwrite the line.
const inject = "x\x1b]52;c;aW5qZWN0ZWQ=\x07\x1b[2J\x1b[1;1H\u009b31m\u009d0;pwned\u009c\rfake\b\by"

// ownSGR is the only escape sequence a frame may hold: our own colours.
var ownSGR = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestTerminalEscapeInjectionTree: control sequences in the names, tool
// names, errors, ids and answer a frame shows are drawn visibly, and the
// frame's only escape sequences are its own colours.
func TestTerminalEscapeInjectionTree(t *testing.T) {
	m := New(t0)
	s := newStream()
	for i, e := range []event.Event{
		event.RunStarted{SessionID: "root", AgentName: "lead" + inject},
		s.tool("root", "c1", "task"+inject),
		s.spawn("root", "kid"+inject, "kid"+inject, event.Mechanism("task"+inject), event.SourceAgent),
		s.spawn("root", "bad", "bad", event.MechanismTask, event.SourceAgent),
		s.end("bad", event.StopError, 10, 100, "failed: "+inject),
		s.text("root", "answer "+inject+"\nline two"),
	} {
		m.Apply(e, at(i*100))
	}
	for _, o := range []Options{
		{Now: at(1000), Color: true, AnswerLines: 6, IDs: true},
		{Now: at(1000), Color: true, AnswerLines: 6, Width: 60, Height: 20},
	} {
		checkNoInjection(t, m.Render(o))
	}
	m.Finish(Summary{SessionID: "root", Stop: event.StopError, Err: "run failed: " + inject}, at(2000))
	got := m.Render(Options{Now: at(2000), Color: true, Expand: true, IDs: true})
	checkNoInjection(t, got)
	if !strings.Contains(got, "␛]52;c;aW5qZWN0ZWQ=␇") {
		t.Errorf("the injected text is not shown visibly:\n%s", got)
	}
}

func checkNoInjection(t *testing.T, frame string) {
	t.Helper()
	rest := ownSGR.ReplaceAllString(frame, "")
	if i := strings.IndexFunc(rest, func(r rune) bool {
		return r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f
	}); i >= 0 {
		t.Errorf("frame holds control %q at %d:\n%q", rest[i:], i, frame)
	}
}
