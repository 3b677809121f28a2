package id

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Prefixes of the id kinds used across the project.
const (
	Session  = "ses"
	Message  = "msg"
	Part     = "prt"
	ToolCall = "cal"
	Event    = "evt"
	Task     = "tsk"
	Run      = "run"
)

const (
	timeMask   = 1<<56 - 1 // the time part is truncated to 7 bytes
	randomLen  = 12
	hexLen     = 14
	base62     = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	randBufLen = 4096
)

// Generator hands out ids. The zero value is ready to use.
type Generator struct {
	mu   sync.Mutex
	last uint64 // last time part handed out (unix_ms*0x1000 + counter)
	// buf holds pre-generated random bytes so that one refill serves
	// hundreds of ids; pos is the next unread byte. They come from a
	// ChaCha8 stream (a cryptographically strong generator) seeded once
	// (see seed): refilling from the kernel for every few hundred ids
	// cost more than the rest of the id.
	buf [randBufLen]byte
	pos int
	rng *rand.ChaCha8
	// now is the clock; tests may replace it.
	now func() time.Time
}

var std Generator

// Ascending returns a new id with the given prefix that sorts after every id
// this process generated before it.
func Ascending(prefix string) string { return std.Ascending(prefix) }

// Descending returns a new id with the given prefix that sorts before every
// descending id this process generated before it (newest first).
func Descending(prefix string) string { return std.Descending(prefix) }

// AscendingAt is Ascending for a caller that has just read the clock: its
// time is used instead of reading the clock again (a clock read costs as
// much as the rest of the id on some virtual machines). Monotonicity is
// kept whatever the time given.
func AscendingAt(prefix string, now time.Time) string { return std.AscendingAt(prefix, now) }

// DescendingAt is Descending with the caller's clock reading (see
// AscendingAt).
func DescendingAt(prefix string, now time.Time) string { return std.DescendingAt(prefix, now) }

// AscendingAt returns a new ascending id, using now as the clock.
func (g *Generator) AscendingAt(prefix string, now time.Time) string {
	return g.make(prefix, false, now)
}

// DescendingAt returns a new descending id, using now as the clock.
func (g *Generator) DescendingAt(prefix string, now time.Time) string {
	return g.make(prefix, true, now)
}

// Ascending returns a new ascending id with the given prefix.
func (g *Generator) Ascending(prefix string) string { return g.make(prefix, false, time.Time{}) }

// Descending returns a new descending id with the given prefix.
func (g *Generator) Descending(prefix string) string { return g.make(prefix, true, time.Time{}) }

// AppendAscendingAt appends to b a new ascending id, using now as the
// clock, and returns the extended buffer: AscendingAt for a caller that
// writes the id out at once (an event stream numbering its frames) and
// needs no string of it.
func (g *Generator) AppendAscendingAt(b []byte, prefix string, now time.Time) []byte {
	return g.appendID(b, prefix, false, now)
}

// make builds an id; a zero now means "read the clock". The id is built
// in a stack buffer: the returned string is the only allocation (a long
// prefix takes the slow path).
func (g *Generator) make(prefix string, descending bool, now time.Time) string {
	var buf [32]byte
	return string(g.appendID(buf[:0], prefix, descending, now))
}

// appendID appends a new id to b; a zero now means "read the clock".
func (g *Generator) appendID(b []byte, prefix string, descending bool, now time.Time) []byte {
	var rnd [randomLen]byte
	if now.IsZero() {
		now = g.clock()
	}
	g.mu.Lock()
	ms := now.UnixMilli()
	t := (uint64(ms) * 0x1000) & timeMask
	if t <= g.last {
		// Same millisecond (or the clock stepped back): keep counting from
		// the last value so ids stay strictly monotonic.
		t = (g.last + 1) & timeMask
	}
	g.last = t
	if g.pos+randomLen > len(g.buf) || g.pos == 0 {
		if g.rng == nil {
			g.rng = rand.NewChaCha8(seed())
		}
		_, _ = g.rng.Read(g.buf[:]) // never fails
		g.pos = 0
	}
	copy(rnd[:], g.buf[g.pos:g.pos+randomLen])
	g.pos += randomLen
	g.mu.Unlock()

	if descending {
		t = ^t & timeMask
	}
	start := len(b)
	b = slices.Grow(b, len(prefix)+1+hexLen+randomLen)
	out := b[start : start+len(prefix)+1+hexLen+randomLen]
	n := copy(out, prefix)
	out[n] = '_'
	n++
	const hexdigits = "0123456789abcdef"
	for i := hexLen - 1; i >= 0; i-- {
		out[n+i] = hexdigits[t&0xf]
		t >>= 4
	}
	n += hexLen
	for i, c := range rnd {
		// 248 = 4*62: rejection would bias less, but a modulo of a byte over
		// 62 symbols is fine for uniqueness, which is all the tail is for.
		out[n+i] = base62[int(c)%62]
	}
	return b[:start+len(out)]
}

func (g *Generator) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}

// seed is a seed no other process draws: from math/rand/v2's global
// generator, which the runtime seeds from the kernel's entropy at start
// (a ChaCha8 stream per thread). Ids must be unique, not secret (they are
// names, never credentials), so crypto/rand, which would bring the
// crypto packages (about 30) into every package that makes ids, is not
// needed.
func seed() [32]byte {
	var s [32]byte
	for i := 0; i < len(s); i += 8 {
		binary.LittleEndian.PutUint64(s[i:], rand.Uint64())
	}
	return s
}

// NewSeeded returns a generator whose random tails come from a ChaCha8
// stream seeded with seed: given the same seed and the same times, it hands
// out the same ids, which a durable engine's replayed workflow must do.
func NewSeeded(seed [32]byte) *Generator {
	return &Generator{rng: rand.NewChaCha8(seed)}
}

// NewSeededFrom is NewSeeded for a generator whose ids come after the
// first n that a generator would make at time at: its next id made at at
// (or before it) has the time part of the (n+1)-th. Given the same seed,
// time and n, it hands out the same ids whatever was made before: a
// durable engine names the n-th item of a list (a team's member) so that
// any run of its workflow names it alike.
func NewSeededFrom(seed [32]byte, at time.Time, n int) *Generator {
	g := NewSeeded(seed)
	g.last = (uint64(at.UnixMilli())*0x1000 + uint64(n) - 1) & timeMask
	return g
}
