package provider

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r *EventReader) ([]Event, error) {
	t.Helper()
	var out []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, Event{Name: ev.Name, Data: append([]byte(nil), ev.Data...)})
	}
}

func TestEventReader(t *testing.T) {
	const stream = ": comment\n\n" +
		"event: a\ndata: 1\n\n" + // LF
		"event:b\r\ndata:2\r\nid: 7\r\nretry: 10\r\n\r\n" + // CRLF, no space after the colon
		"data: x\rdata:  y\r\r" + // lone CR; only one space is dropped
		"event: named-only\n\n" + // no data: not dispatched
		"data\n\n" + // a field without a colon: empty data
		"data: {\ndata: }\n\n" +
		"event: cut\ndata: never" // the stream ends inside an event
	want := []Event{{"a", []byte("1")}, {"b", []byte("2")}, {"", []byte("x\n y")}, {"", []byte("")}, {"", []byte("{\n}")}}
	// One byte at a time too: a CRLF split across reads is one line end.
	for _, r := range []io.Reader{strings.NewReader(stream), iotest.OneByteReader(strings.NewReader(stream))} {
		got, err := readAll(t, NewEventReader(r))
		if err != io.EOF {
			t.Fatalf("err = %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		for i := range want {
			if got[i].Name != want[i].Name || string(got[i].Data) != string(want[i].Data) {
				t.Errorf("event %d: got %q %q, want %q %q", i, got[i].Name, got[i].Data, want[i].Name, want[i].Data)
			}
		}
	}
}

// endless is a stream that never ends a line.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += len(p)
	return len(p), nil
}

// TestStreamLineTooLong: a line or an event above MaxEvent is
// ErrEventTooLong, read after about MaxEvent bytes: not a hang on a
// stream that never ends the line, nor a buffer that grows without end.
func TestStreamLineTooLong(t *testing.T) {
	src := &endless{}
	_, err := NewEventReader(io.MultiReader(strings.NewReader("data: "), src)).Next()
	if !errors.Is(err, ErrEventTooLong) || err.Error() != "server-sent event longer than 1048576 bytes" {
		t.Fatalf("err = %v", err)
	}
	if src.n > 2*MaxEvent {
		t.Fatalf("read %d bytes for a bound of %d", src.n, MaxEvent)
	}
	// Many short data lines that add up to more than MaxEvent.
	line := "data: " + strings.Repeat("y", 1000) + "\n"
	_, err = NewEventReader(strings.NewReader(strings.Repeat(line, MaxEvent/1000+1) + "\n")).Next()
	if !errors.Is(err, ErrEventTooLong) {
		t.Fatalf("err = %v", err)
	}
	// An event of exactly MaxEvent bytes is fine.
	ev, err := NewEventReader(strings.NewReader("data: " + strings.Repeat("z", MaxEvent) + "\n\n")).Next()
	if err != nil || len(ev.Data) != MaxEvent {
		t.Fatalf("len %d, err %v", len(ev.Data), err)
	}
}
