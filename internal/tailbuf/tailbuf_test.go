package tailbuf

import (
	"strings"
	"sync"
	"testing"
)

func TestKeepsTheEnd(t *testing.T) {
	b := New(16)
	b.Write([]byte("first line\n"))
	if got := b.String(); got != "first line" {
		t.Fatalf("whole: %q", got)
	}
	b.Write([]byte("second\nthird line\n"))
	if got := b.String(); got != "…\nthird line" {
		t.Fatalf("cut: %q, want the last whole line after a mark", got)
	}
}

func TestCutInsideALongLine(t *testing.T) {
	b := New(8)
	b.Write([]byte(strings.Repeat("x", 20)))
	if got := b.String(); got != "…\n"+strings.Repeat("x", 8) {
		t.Fatalf("%q", got)
	}
}

func TestInvalidUTF8Replaced(t *testing.T) {
	b := New(4)
	b.Write([]byte("é€")) // 2 + 3 bytes: the cut splits é
	if got := b.String(); got != "…\n\uFFFD€" {
		t.Fatalf("%q", got)
	}
}

func TestConcurrentWrites(t *testing.T) {
	b := New(64)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := len(b.buf); n > 64 {
		t.Fatalf("kept %d bytes, bound 64", n)
	}
}
