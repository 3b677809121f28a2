package queue

import (
	"context"
	"sync/atomic"
	"testing"
)

// BenchmarkPushTake: one producer, one consumer that takes at once; per
// item.
func BenchmarkPushTake(b *testing.B) {
	q := New(Options[msg]{Merge: mergeMsg})
	done := make(chan int)
	go func() {
		n := 0
		for {
			batch, err := q.Take(context.Background())
			if err != nil {
				done <- n
				return
			}
			n += len(batch)
		}
	}()
	m := life("a", "x")
	b.ReportAllocs()
	for b.Loop() {
		q.Push(m)
	}
	q.Close()
	<-done
}

// BenchmarkGroupParallel: one producer per queue, one consumer for all.
func BenchmarkGroupParallel(b *testing.B) {
	g := NewGroup[msg]()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := g.Take(context.Background()); err != nil {
				return
			}
		}
	}()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		q := New(Options[msg]{Group: g, Merge: mergeMsg})
		m := life(string(rune('a'+n.Add(1))), "x")
		for pb.Next() {
			q.Push(m)
		}
	})
	g.Close()
	<-done
}

// BenchmarkMergeFull: a consumer that reads nothing; every delta merges.
func BenchmarkMergeFull(b *testing.B) {
	q := New(Options[msg]{Capacity: 4, Merge: mergeMsg})
	for range 4 {
		q.Push(delta("a", ""))
	}
	m := delta("a", "")
	b.ReportAllocs()
	for b.Loop() {
		q.Push(m)
	}
}
