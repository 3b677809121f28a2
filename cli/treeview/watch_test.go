package treeview

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// TestWatchRedrawsUntilDone: Watch reads frames until one says it is done,
// and leaves that one.
func TestWatchRedrawsUntilDone(t *testing.T) {
	var out bytes.Buffer
	n := 0
	frame := func(int) (string, bool, error) {
		n++
		return fmt.Sprintf("frame %d", n), n == 3, nil
	}
	if err := Watch(&out, frame, time.Millisecond, tea.WithWindowSize(80, 24)); err != nil {
		t.Fatal(err)
	}
	if n != 3 || !strings.Contains(out.String(), "frame 3") {
		t.Errorf("read %d frames, output %q", n, out.String())
	}
}

func TestWatchStopsOnError(t *testing.T) {
	boom := errors.New("store gone")
	err := Watch(&bytes.Buffer{}, func(int) (string, bool, error) { return "", false, boom }, time.Millisecond, tea.WithWindowSize(80, 24))
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}
