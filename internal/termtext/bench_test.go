package termtext

import (
	"io"
	"strings"
	"testing"
)

// A 4 KiB model answer, without and with control sequences in it.
var (
	cleanAnswer = strings.Repeat("A line of model output, with é, 😀 and a\ttab.\n", 4096/48)
	dirtyAnswer = strings.Repeat("A line \x1b]52;c;aGk=\x07 of output \u009b2J\r\n", 4096/40)
)

func BenchmarkText(b *testing.B) {
	for _, c := range []struct{ name, s string }{{"clean", cleanAnswer}, {"controls", dirtyAnswer}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				_ = Text(c.s)
			}
		})
	}
}

func BenchmarkWriter(b *testing.B) {
	w := NewWriter(io.Discard)
	p := []byte(cleanAnswer)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		w.Write(p)
	}
}
