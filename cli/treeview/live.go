package treeview

import (
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/agentpool/agentpool/event"
)

// Live draws a Model on a terminal while a run goes on, redrawing it in
// place. It is an event.Sink: each event is sent into the bubbletea
// program, whose loop is the only goroutine touching the model.
type Live struct {
	p    *tea.Program
	out  io.Writer
	now  func() time.Time
	done chan struct{}
	err  error
	// lines is the height of the last frame drawn (see releaser).
	lines *atomic.Int64
}

// Tick is how often the spinner and elapsed times move.
const Tick = 100 * time.Millisecond

// The messages of the program.
type (
	eventMsg struct {
		e  event.Event
		at time.Time
	}
	tickMsg   time.Time
	finishMsg struct {
		s  Summary
		at time.Time
	}
	stopMsg struct{}
)

// teaModel adapts Model to bubbletea: Update applies messages, View
// renders. It holds no state a test of Model would miss.
type teaModel struct {
	m      *Model
	now    func() time.Time
	at     time.Time
	frame  int
	width  int
	height int
	gone   bool   // stopped without a final frame: draw nothing
	drawn  string // the last frame: View is called after every message, drawing is per tick
	lines  *atomic.Int64
}

func (t *teaModel) Init() tea.Cmd { return t.tick() }

func (t *teaModel) tick() tea.Cmd {
	return tea.Tick(Tick, func(at time.Time) tea.Msg { return tickMsg(at) })
}

func (t *teaModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case eventMsg:
		// Only applied: a run of thousands of sessions sends events far
		// faster than a terminal shows frames, so drawing waits for a tick.
		t.m.Apply(msg.e, msg.at)
	case tickMsg:
		if t.m.Summary != nil {
			return t, nil
		}
		t.frame++
		t.at = t.now()
		t.draw()
		return t, t.tick()
	case tea.WindowSizeMsg:
		t.width, t.height = msg.Width, msg.Height
		t.draw()
	case finishMsg:
		t.m.Finish(msg.s, msg.at)
		t.at = msg.at
		t.draw()
		return t, tea.Quit
	case stopMsg:
		t.gone = true
		return t, tea.Quit
	}
	return t, nil
}

func (t *teaModel) View() tea.View {
	if t.gone {
		return tea.NewView("")
	}
	return tea.NewView(t.drawn)
}

// draw renders the frame View shows, at most a screenful high.
func (t *teaModel) draw() {
	t.drawn = t.m.Render(Options{
		Now: t.at, Frame: t.frame, Width: t.width, Height: t.height - 1, Color: true, AnswerLines: 6, Whole: true,
	}) + "\n"
	t.lines.Store(int64(strings.Count(t.drawn, "\n")))
}

// Start starts drawing on out (a terminal) a run that begins now. The
// program reads no input, so the terminal stays in its normal mode and
// Ctrl-C reaches the process as SIGINT, which cancels the run; the
// program installs no signal handler of its own. opts are added to the
// program's (tests give a window size to a buffer that is no terminal).
func Start(out io.Writer, now func() time.Time, opts ...tea.ProgramOption) *Live {
	if now == nil {
		now = time.Now
	}
	tm := &teaModel{m: New(now()), now: now, at: now(), lines: &atomic.Int64{}}
	tm.draw()
	l := &Live{out: out, now: now, done: make(chan struct{}), lines: tm.lines}
	opts = append([]tea.ProgramOption{tea.WithOutput(out), tea.WithInput(nil), tea.WithoutSignalHandler()}, opts...)
	l.p = tea.NewProgram(tm, opts...)
	go func() {
		defer close(l.done)
		_, l.err = l.p.Run()
	}()
	return l
}

// Emit implements event.Sink.
func (l *Live) Emit(e event.Event) {
	l.p.Send(eventMsg{e: e, at: l.now()})
}

// Finish draws the final frame for s and waits for the program to
// restore the terminal.
func (l *Live) Finish(s Summary) error {
	l.p.Send(finishMsg{s: s, at: l.now()})
	<-l.done
	return l.err
}

// Stop erases the tree and restores the terminal, for a run that did
// not start (its error is printed instead).
func (l *Live) Stop() error {
	l.p.Send(stopMsg{})
	<-l.done
	return l.err
}

// Locker returns a lock that, while held, gives the terminal back (for a
// question to the user): the tree is not drawn over it. What is written
// meanwhile must end with a line feed; it stays above the tree.
func (l *Live) Locker() sync.Locker { return (*releaser)(l) }

type releaser Live

func (r *releaser) Lock() { _ = r.p.ReleaseTerminal() }

// Unlock gives the terminal back to the tree. The renderer, restarted,
// takes the cursor to be on the empty line under its last frame and moves
// up from there to redraw: as many blank lines as the frame has are what
// it draws over, instead of the end of what was written meanwhile.
func (r *releaser) Unlock() {
	if n := r.lines.Load(); n > 0 {
		_, _ = io.WriteString(r.out, strings.Repeat("\n", int(n)))
	}
	_ = r.p.RestoreTerminal()
}
