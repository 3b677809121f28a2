package provider

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxEvent bounds the data of one server-sent event (and so any line of
// the stream): a longer one ends the stream with ErrEventTooLong rather
// than growing a buffer without end.
const MaxEvent = 1 << 20

// ErrEventTooLong is the error of a stream with an event (or line) longer
// than MaxEvent.
var ErrEventTooLong = fmt.Errorf("server-sent event longer than %d bytes", MaxEvent)

// Event is one server-sent event.
type Event struct {
	// Name is the value of the event's "event:" field; "" when it has
	// none.
	Name string
	// Data is the event's "data:" lines joined by "\n". It is valid until
	// the next call of Next.
	Data []byte
}

// EventReader reads a text/event-stream (the WHATWG HTML "server-sent
// events" format): lines end in LF, CRLF or CR; a line starting with ":"
// is a comment; "field: value" lines (one optional space after the
// colon) build an event that a blank line dispatches; "id" and "retry"
// are ignored (a model response is not resumed). An event without data is
// not dispatched, nor is an event the stream ends in the middle of.
type EventReader struct {
	sc   *bufio.Scanner
	data []byte
	name string
}

// NewEventReader reads events from r.
func NewEventReader(r io.Reader) *EventReader {
	sc := bufio.NewScanner(r)
	// A line holds at most a field name, ": " and MaxEvent bytes of data.
	sc.Buffer(make([]byte, 0, 4096), MaxEvent+64)
	sc.Split(scanLines)
	return &EventReader{sc: sc}
}

// Next returns the next event; io.EOF at the end of the stream, or the
// error of the reader (ErrEventTooLong for a line or event above
// MaxEvent).
func (r *EventReader) Next() (Event, error) {
	r.data, r.name = r.data[:0], ""
	hasData := false
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if hasData {
				return Event{Name: r.name, Data: r.data}, nil
			}
			r.name = ""
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "": // a comment
		case "event":
			r.name = string(value)
		case "data":
			if hasData {
				r.data = append(r.data, '\n')
			}
			if len(r.data)+len(value) > MaxEvent {
				return Event{}, ErrEventTooLong
			}
			r.data = append(r.data, value...)
			hasData = true
		}
	}
	switch err := r.sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return Event{}, ErrEventTooLong
	case err != nil:
		return Event{}, err
	}
	return Event{}, io.EOF
}

// scanLines is bufio.ScanLines for the line ends of event streams: LF,
// CRLF and a lone CR.
func scanLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		// A CR: one line end with the LF that may follow it, which may
		// not have arrived yet.
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if !atEOF {
			return 0, nil, nil
		}
		return i + 1, data[:i], nil
	}
	if atEOF {
		// The last line has no line end: the stream ended in the middle
		// of it.
		return len(data), data, nil
	}
	return 0, nil, nil
}
