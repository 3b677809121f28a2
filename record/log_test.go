package record

// Tests of the run's log (log.go): consumers are called without the run's
// lock, each in the run's order, a slow one holds up neither the other
// producers nor the other consumers until the log is full, and Sync is a
// barrier.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// gateSink holds the delivery of the event whose delta is hold until gate
// is closed, after telling held; it keeps what it got.
type gateSink struct {
	hold string
	held chan struct{}
	gate chan struct{}
	mu   sync.Mutex
	got  []event.Event
}

func (s *gateSink) Emit(e event.Event) {
	if d, ok := e.(event.PartDelta); ok && d.Delta.ContentDelta == s.hold {
		close(s.held)
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, e)
}

func (s *gateSink) events() []event.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// logWatcher keeps what it observes.
type logWatcher struct {
	mu  sync.Mutex
	got []event.Event
}

func (w *logWatcher) Observe(_ context.Context, _ string, e event.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, e)
}

func (w *logWatcher) events() []event.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

func delta(s string) event.Event {
	return event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: s}}
}

func newRun(t *testing.T, next event.Sink) (*Recorder, *logWatcher, session.Store) {
	t.Helper()
	ctx := context.Background()
	st := memory.New()
	if err := st.CreateSession(ctx, session.Session{ID: lRoot, Status: session.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	p := New(st, nil)
	w := &logWatcher{}
	t.Cleanup(p.Watch(w))
	return p.Open(ctx, lRoot, next), w, st
}

func stored(t *testing.T, st session.Store) []event.Event {
	t.Helper()
	recs, err := st.Events(context.Background(), lRoot, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []event.Event
	for _, r := range recs {
		out = append(out, r.Event)
	}
	return out
}

// TestSlowSinkHoldsUpNobodyElse: while the caller's sink is held inside an
// event's delivery, another producer of the run emits: its Emit returns
// at once (no consumer runs under the run's lock), its event is stored
// and the watcher has it (the watcher's delivery is not the sink's). Once
// the sink goes on, it gets both events in the run's order, by Sync.
func TestSlowSinkHoldsUpNobodyElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &gateSink{hold: "a", held: make(chan struct{}), gate: make(chan struct{})}
		r, w, st := newRun(t, sink)
		r.Emit(event.RunStarted{SessionID: lRoot})
		aDone := make(chan struct{})
		go func() {
			defer close(aDone)
			r.Emit(delta("a"))
		}()
		<-sink.held
		r.Emit(delta("b")) // returns: the sink's token is A's
		if got := stored(t, st); len(got) != 3 {
			t.Fatalf("stored %d events while the sink was held, want 3", len(got))
		}
		if got := w.events(); len(got) != 3 {
			t.Fatalf("the watcher has %d events while the sink was held, want 3", len(got))
		}
		synctest.Wait()
		select {
		case <-aDone:
			t.Fatal("A's Emit returned while its delivery was held")
		default:
		}
		close(sink.gate)
		<-aDone
		r.Sync()
		if got, want := fmt.Sprint(sink.events()), fmt.Sprint(stored(t, st)); got != want {
			t.Errorf("sink got %s, stored %s", got, want)
		}
	})
}

// TestFullLogBlocksTheProducer: a sink held inside an event's delivery
// holds at most maxLog events of the run; the producer that finds the
// log full waits (nothing dropped, nothing stored ahead of the log), and
// goes on when the sink does.
func TestFullLogBlocksTheProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &gateSink{hold: "a", held: make(chan struct{}), gate: make(chan struct{})}
		r, _, st := newRun(t, sink)
		aDone := make(chan struct{})
		go func() {
			defer close(aDone)
			r.Emit(delta("a")) // entry 0, held in the sink
		}()
		<-sink.held
		var emitted atomic.Int64
		const more = maxLog + 10
		bDone := make(chan struct{})
		go func() {
			defer close(bDone)
			for i := range more {
				r.Emit(delta(fmt.Sprint("b", i)))
				emitted.Add(1)
			}
		}()
		synctest.Wait() // B blocked: the log is full
		if n := emitted.Load(); n != maxLog-1 {
			t.Fatalf("%d events emitted past a held sink, want %d", n, maxLog-1)
		}
		if n := len(stored(t, st)); n != maxLog {
			t.Fatalf("%d events stored while the log was full, want %d", n, maxLog)
		}
		close(sink.gate)
		<-aDone
		<-bDone
		r.Sync()
		if n := len(sink.events()); n != more+1 {
			t.Errorf("the sink got %d events, want %d", n, more+1)
		}
	})
}

// TestSyncWaitsForTheDelivery: Sync returns once the sink has had every
// event emitted before it, even one another goroutine is delivering.
func TestSyncWaitsForTheDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &gateSink{hold: "a", held: make(chan struct{}), gate: make(chan struct{})}
		r, _, _ := newRun(t, sink)
		go r.Emit(delta("a"))
		<-sink.held
		r.Emit(delta("b"))
		synced := make(chan struct{})
		go func() {
			defer close(synced)
			r.Sync()
		}()
		synctest.Wait()
		select {
		case <-synced:
			t.Fatal("Sync returned while the sink was held")
		default:
		}
		close(sink.gate)
		<-synced
		if n := len(sink.events()); n != 2 {
			t.Errorf("after Sync the sink has %d events, want 2", n)
		}
	})
}

// TestConcurrentProducersOneOrder: producers of one run emit at once; the
// store, the watcher and the sink each see one and the same order.
func TestConcurrentProducersOneOrder(t *testing.T) {
	var mu sync.Mutex
	var passed []event.Event
	r, w, st := newRun(t, event.SinkFunc(func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		passed = append(passed, e)
	}))
	const producers, each = 8, 300
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				r.Emit(delta(fmt.Sprint(p, "/", i)))
			}
		})
	}
	wg.Wait()
	r.Sync()
	want := fmt.Sprint(stored(t, st))
	if len(stored(t, st)) != producers*each {
		t.Fatalf("stored %d events", len(stored(t, st)))
	}
	mu.Lock()
	got := fmt.Sprint(passed)
	mu.Unlock()
	if got != want {
		t.Error("the sink's order is not the store's")
	}
	if fmt.Sprint(w.events()) != want {
		t.Error("the watcher's order is not the store's")
	}
}

// TestPanickingConsumer: a sink that panics on an event panics the
// producer that delivered it, and nothing else: the event counts as
// handed over, the watcher and the sink get the run's later events, and
// Sync returns.
func TestPanickingConsumer(t *testing.T) {
	var got []event.Event
	r, w, _ := newRun(t, event.SinkFunc(func(e event.Event) {
		if d, ok := e.(event.PartDelta); ok && d.Delta.ContentDelta == "boom" {
			panic("consumer bug")
		}
		got = append(got, e)
	}))
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the consumer's panic did not reach the producer")
			}
		}()
		r.Emit(delta("boom"))
	}()
	r.Emit(delta("after"))
	r.Sync()
	if len(got) != 1 || len(w.events()) != 2 {
		t.Errorf("after the panic: the sink got %d events (want 1), the watcher %d (want 2)", len(got), len(w.events()))
	}
}

// TestRingLetsGoOfDeliveredEvents: once every consumer has had an entry,
// the ring does not keep its event alive: after a producer alone in its
// run emitted n events, only the last one (which no later Emit has cleared
// yet) is still in the ring.
func TestRingLetsGoOfDeliveredEvents(t *testing.T) {
	sink := &gateSink{}
	r, w, _ := newRun(t, sink)
	const n = 5
	for i := range n {
		r.Emit(delta(fmt.Sprint(i)))
	}
	r.Emit(delta("last"))
	if len(sink.events()) != n+1 || len(w.events()) != n+1 {
		t.Fatalf("sink %d, watcher %d events, want %d", len(sink.events()), len(w.events()), n+1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var kept []event.Event
	for _, en := range r.ring {
		if en.e != nil {
			kept = append(kept, en.e)
		}
	}
	if len(kept) != 1 || kept[0] != delta("last") {
		t.Fatalf("the ring keeps %v, want the last event only", kept)
	}
}
