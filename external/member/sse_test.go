package member

import (
	"errors"
	"strings"
	"testing"
)

// TestEvents: data lines joined, other fields skipped, the last event
// without a blank line kept, and an event over the bound ends the
// sequence with ErrEventTooLarge.
func TestEvents(t *testing.T) {
	in := ": comment\nevent: x\ndata: a\ndata: b\n\nid: 2\ndata:c\n\ndata: last"
	var got []string
	for d, err := range Events(strings.NewReader(in), 64) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(d))
	}
	if strings.Join(got, "|") != "a\nb|c|last" {
		t.Fatalf("events %q", got)
	}
	for _, in := range []string{"data: " + strings.Repeat("x", 100) + "\n\n", "data: " + strings.Repeat("x", 40) + "\ndata: " + strings.Repeat("y", 40) + "\n\n"} {
		var last error
		for _, err := range Events(strings.NewReader(in), 64) {
			last = err
		}
		if !errors.Is(last, ErrEventTooLarge) {
			t.Errorf("over the bound: %v", last)
		}
	}
}
