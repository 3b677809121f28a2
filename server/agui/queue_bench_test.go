package agui

import (
	"context"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"testing"
)

// BenchmarkQueue: a run's events through its queue to a consumer that
// takes them at once, per event. Lifecycle events: none merges, the
// producer waits when the queue is full.
func BenchmarkQueue(b *testing.B) {
	q := newQueue(0)
	items := make([]item, 64)
	for i := range items {
		items[i] = lifecycle("ses_1", wire.TypeStepStarted)
	}
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
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		q.Push(items[i%len(items)])
	}
	q.Close()
	if n := <-done; n != b.N {
		b.Fatalf("took %d, pushed %d", n, b.N)
	}
}

// BenchmarkQueueFull: a client that reads nothing: every delta merges
// into the full queue.
func BenchmarkQueueFull(b *testing.B) {
	q := newQueue(4)
	for range 4 {
		q.Push(item{ev: &wire.Event{Type: wire.TypeTextMessageContent, MessageID: "msg_1"}, delta: "t", owner: "ses_1", class: classDelta})
	}
	ev := &wire.Event{Type: wire.TypeTextMessageContent, MessageID: "msg_1"}
	it := item{ev: ev, owner: "ses_1", class: classDelta}
	// The set-up's deltas of one message merge too (a queue joins a
	// delta into its last item of the same message): count from here.
	m0, _ := stats(q)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		q.Push(it) // an empty delta: merging allocates nothing
	}
	b.StopTimer()
	if m, _ := stats(q); m-m0 != b.N {
		b.Fatalf("merged %d of %d", m-m0, b.N)
	}
}
