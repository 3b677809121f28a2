package cli

import (
	"strings"
	"testing"
)

// TestWarningsHeldWhileTheTreeDraws: warnings written while held come
// out in order after release, and later ones go straight through.
func TestWarningsHeldWhileTheTreeDraws(t *testing.T) {
	var out strings.Builder
	ww := &warningWriter{w: &out}
	ww.Write([]byte("before\n"))
	ww.hold()
	ww.Write([]byte("one\n"))
	ww.Write([]byte("two\n"))
	if got := out.String(); got != "before\n" {
		t.Fatalf("while held, stderr got %q", got)
	}
	ww.release()
	ww.Write([]byte("after\n"))
	if got := out.String(); got != "before\none\ntwo\nafter\n" {
		t.Fatalf("stderr got %q", got)
	}
}
