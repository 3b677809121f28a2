package treeview

import (
	"errors"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"
)

// FrameFunc draws the current frame of something watched from outside
// (a session another process runs, read back from the store) and says
// whether it is over.
type FrameFunc func(width int) (frame string, done bool, err error)

// Watch redraws frame every interval on out (a terminal) until it says
// it is done, and leaves that last frame. Frames are read in bubbletea
// commands, off the program's loop.
func Watch(out io.Writer, frame FrameFunc, interval time.Duration, opts ...tea.ProgramOption) error {
	w := &watchModel{frame: frame, interval: interval}
	opts = append([]tea.ProgramOption{tea.WithOutput(out), tea.WithInput(nil)}, opts...)
	if _, err := tea.NewProgram(w, opts...).Run(); err != nil && !errors.Is(err, tea.ErrInterrupted) {
		return err // Ctrl-C only stops watching
	}
	return w.err
}

type watchModel struct {
	frame    FrameFunc
	interval time.Duration
	width    int
	shown    string
	err      error
}

// frameMsg is one frame read by a command.
type frameMsg struct {
	s    string
	done bool
	err  error
}

// readMsg asks for a frame to be read.
type readMsg struct{}

func (w *watchModel) read() tea.Cmd {
	width := w.width
	return func() tea.Msg {
		s, done, err := w.frame(width)
		return frameMsg{s, done, err}
	}
}

func (w *watchModel) Init() tea.Cmd { return w.read() }

func (w *watchModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		w.width = msg.Width
	case frameMsg:
		if msg.err != nil {
			w.err = msg.err
			return w, tea.Quit
		}
		w.shown = msg.s + "\n"
		if msg.done {
			return w, tea.Quit
		}
		return w, tea.Tick(w.interval, func(time.Time) tea.Msg { return readMsg{} })
	case readMsg:
		return w, w.read()
	}
	return w, nil
}

func (w *watchModel) View() tea.View { return tea.NewView(w.shown) }
