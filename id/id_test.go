package id

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for _, s := range []string{Ascending(Session), Descending(Session), Ascending(Message)} {
		prefix, rest, ok := strings.Cut(s, "_")
		if !ok || len(prefix) != 3 || len(rest) != 26 {
			t.Fatalf("bad id %q", s)
		}
		for _, c := range rest[:14] {
			if !strings.ContainsRune("0123456789abcdef", c) {
				t.Fatalf("time part of %q is not hex", s)
			}
		}
		for _, c := range rest[14:] {
			if !strings.ContainsRune(base62, c) {
				t.Fatalf("random part of %q is not base62", s)
			}
		}
	}
}

// AppendAscendingAt appends to what the buffer holds an id as
// AscendingAt makes it, from the same sequence.
func TestAppendAscendingAt(t *testing.T) {
	var g Generator
	now := time.Now()
	first := g.AscendingAt(Event, now)
	b := g.AppendAscendingAt([]byte("x:"), Event, now)
	last := g.AscendingAt(Event, now)
	got, ok := strings.CutPrefix(string(b), "x:")
	if !ok || len(got) != len(first) || !strings.HasPrefix(got, Event+"_") || got <= first || got >= last {
		t.Fatalf("appended %q between %q and %q", b, first, last)
	}
}

func TestConcurrentMonotonicUnique(t *testing.T) {
	const goroutines, perG = 8, 100_000
	var g Generator
	results := make([][]string, goroutines)
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			ids := make([]string, perG)
			for j := range ids {
				ids[j] = g.Ascending(Event)
			}
			results[i] = ids
		})
	}
	wg.Wait()
	seen := make(map[string]struct{}, goroutines*perG)
	for _, ids := range results {
		if !slices.IsSorted(ids) {
			t.Fatal("ids of one goroutine are not sorted")
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] == ids[i-1] {
				t.Fatal("duplicate within goroutine")
			}
		}
		for _, s := range ids {
			if _, dup := seen[s]; dup {
				t.Fatalf("duplicate id %s", s)
			}
			seen[s] = struct{}{}
		}
	}
	// All time parts across goroutines are distinct too (strict monotonicity).
	times := make(map[string]struct{}, len(seen))
	for s := range seen {
		times[s[4:18]] = struct{}{}
	}
	if len(times) != len(seen) {
		t.Fatalf("time parts repeat: %d distinct of %d", len(times), len(seen))
	}
}

func TestDescendingSortsNewestFirst(t *testing.T) {
	var g Generator
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = g.Descending(Session)
	}
	if !slices.IsSortedFunc(ids, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Fatal("descending ids are not newest first")
	}
}

func TestClockStepsBack(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	g := Generator{now: func() time.Time { return now }}
	a := g.Ascending(Part)
	now = now.Add(-time.Hour)
	b := g.Ascending(Part)
	if b <= a {
		t.Fatalf("id after clock step back %s <= %s", b, a)
	}
}

func BenchmarkAscending(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Ascending(Session)
	}
}

func BenchmarkAscendingContended(b *testing.B) {
	b.ReportAllocs()
	b.SetParallelism(1) // GOMAXPROCS goroutines (2 here): the seed's "2 goroutines contending"
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = Ascending(Session)
		}
	})
}

func TestAtUsesTheGivenTimeAndStaysMonotonic(t *testing.T) {
	var g Generator
	later := time.Now().Add(time.Hour)
	a := g.AscendingAt(Message, later)
	wantHex := fmt.Sprintf("%014x", (uint64(later.UnixMilli())*0x1000)&timeMask)
	if got := a[len(Message)+1 : len(Message)+1+hexLen]; got != wantHex {
		t.Fatalf("time part %s, want %s", got, wantHex)
	}
	// An earlier time (or the clock) after it still sorts after it.
	b := g.AscendingAt(Message, later.Add(-time.Minute))
	c := g.Ascending(Message)
	if !(a < b && b < c) {
		t.Fatalf("not monotonic: %s %s %s", a, b, c)
	}
	d1 := g.DescendingAt(Session, later)
	d2 := g.DescendingAt(Session, later)
	if !(d2 < d1) {
		t.Fatalf("descending ids do not sort newest first: %s %s", d1, d2)
	}
}
