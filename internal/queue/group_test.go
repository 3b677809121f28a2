package queue

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
)

func groupTake(t *testing.T, g *Group[msg]) string {
	t.Helper()
	b, err := g.Take(context.Background())
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	return show(b)
}

// Queues are served in the order they got items, each one's whole
// contents at a time.
func TestGroupTurns(t *testing.T) {
	g := NewGroup[msg]()
	a := New(Options[msg]{Group: g})
	b := New(Options[msg]{Group: g})
	a.Push(delta("a", "1"))
	b.Push(delta("b", "1"))
	a.Push(delta("a", "2"))
	if got := groupTake(t, g); got != "a=1 a=2" {
		t.Fatalf("first turn %s", got)
	}
	a.Push(delta("a", "3"))
	if got := groupTake(t, g); got != "b=1" {
		t.Fatalf("second turn %s", got)
	}
	if got := groupTake(t, g); got != "a=3" {
		t.Fatalf("third turn %s", got)
	}
	if _, err := a.Take(context.Background()); err == nil {
		t.Fatal("Take of a group's queue")
	}
}

// A full queue makes only its own producers wait; the others go on.
func TestGroupOnlyFullQueueWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGroup[msg]()
		a := newMsgQueue(Options[msg]{Group: g, Capacity: 2})
		b := newMsgQueue(Options[msg]{Group: g, Capacity: 2})
		a.Push(life("a", "1"))
		a.Push(delta("a", "2"))
		a.Push(delta("a", "3")) // merges, without waiting
		if isClosed(g.Blocked()) {
			t.Fatal("the group's Blocked closed before a push waited")
		}
		done := pushAsync(a, life("a", "end"))
		if !waiting(done) {
			t.Fatal("lifecycle push on a full queue did not wait")
		}
		if !isClosed(g.Blocked()) || !isClosed(a.Blocked()) || isClosed(b.Blocked()) {
			t.Fatal("Blocked: want the group's and a's closed, b's open")
		}
		for _, s := range []string{"1", "2"} {
			if err := b.Push(life("b", s)); err != nil {
				t.Fatal(err)
			}
		}
		if b.Len() != 2 || b.Stats().Waited != 0 {
			t.Fatalf("b holds %d, %+v", b.Len(), b.Stats())
		}
		if got := groupTake(t, g); got != "a=1 a=23" {
			t.Fatalf("a's turn %s", got)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if s := g.Stats(); s.Merged != 1 || s.MaxDepth != 2 || s.Waited != 1 || s.Pushed != 6 {
			t.Errorf("stats %+v", s)
		}
	})
}

// Close: what is queued is still taken, in turn, then Take ends; later
// pushes and queues are refused.
func TestGroupClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGroup[msg]()
		a := New(Options[msg]{Group: g, Capacity: 1})
		b := New(Options[msg]{Group: g})
		a.Push(delta("a", "1"))
		b.Push(delta("b", "1"))
		done := pushAsync(a, delta("a", "2"))
		synctest.Wait()
		g.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Fatalf("waiting push after Close: %v", err)
		}
		if err := b.Push(delta("b", "2")); !errors.Is(err, ErrClosed) {
			t.Fatalf("push after Close: %v", err)
		}
		if err := New(Options[msg]{Group: g}).Push(delta("c", "1")); !errors.Is(err, ErrClosed) {
			t.Fatalf("push to a queue that joined after Close: %v", err)
		}
		if got := groupTake(t, g) + " " + groupTake(t, g); got != "a=1 b=1" {
			t.Fatalf("drained %s", got)
		}
		if _, err := g.Take(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("take after the last item: %v", err)
		}
	})
}

// Close wakes a consumer waiting for a queue with items.
func TestGroupCloseWakesTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGroup[msg]()
		New(Options[msg]{Group: g})
		done := make(chan error, 1)
		go func() {
			_, err := g.Take(context.Background())
			done <- err
		}()
		synctest.Wait()
		g.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Fatalf("take: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := NewGroup[int]().Take(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("take with an ended context: %v", err)
		}
	})
}

// Abort (the consumer failed): everything is discarded, waiting and later
// pushes fail with the error, and so do queues that join later.
func TestGroupAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewGroup[msg]()
		a := New(Options[msg]{Group: g, Capacity: 1})
		b := New(Options[msg]{Group: g})
		a.Push(delta("a", "1"))
		b.Push(delta("b", "1"))
		done := pushAsync(a, delta("a", "2"))
		synctest.Wait()
		gone := errors.New("client gone")
		g.Abort(gone)
		if err := <-done; err != gone {
			t.Fatalf("waiting push: %v", err)
		}
		if err := b.Push(delta("b", "2")); err != gone {
			t.Fatalf("later push: %v", err)
		}
		if err := New(Options[msg]{Group: g}).Push(delta("c", "1")); err != gone {
			t.Fatalf("push to a queue that joined later: %v", err)
		}
		if _, err := g.Take(context.Background()); err != gone {
			t.Fatalf("take: %v", err)
		}
		g.Close() // after Abort: nothing changes
		if _, err := g.Take(context.Background()); err != gone {
			t.Fatalf("take: %v", err)
		}
	})
}

// A queue aborted on its own is skipped.
func TestGroupSkipsAbortedQueue(t *testing.T) {
	g := NewGroup[msg]()
	a := New(Options[msg]{Group: g})
	b := New(Options[msg]{Group: g})
	a.Push(delta("a", "1"))
	b.Push(delta("b", "1"))
	a.Abort(nil)
	if got := groupTake(t, g); got != "b=1" {
		t.Fatalf("turn %s", got)
	}
}

// Producers of several queues at once, one consumer, Close while they
// push: under -race, each queue's items in order, none accepted lost.
func TestGroupConcurrent(t *testing.T) {
	const queues, producers, n = 4, 3, 1000
	g := NewGroup[item]()
	var wg sync.WaitGroup
	var accepted sync.Map // producer -> how many items Push accepted
	for range queues {
		q := New(Options[item]{Group: g, Capacity: 8, Merge: mergeItem})
		for range producers {
			p := len(syncMapKeys(&accepted))
			accepted.Store(p, 0)
			wg.Go(func() {
				for i := range n {
					if err := q.Push(item{p: p, nums: []int{i}, life: i%5 == 0}); err != nil {
						if !errors.Is(err, ErrClosed) {
							t.Error(err)
						}
						return
					}
					accepted.Store(p, i+1)
				}
			})
		}
	}
	got := map[int][]int{}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			b, err := g.Take(context.Background())
			if err != nil {
				if !errors.Is(err, ErrClosed) {
					t.Error(err)
				}
				return
			}
			for _, it := range b {
				got[it.p] = append(got[it.p], it.nums...)
			}
		}
	}()
	// Close while some producers still push.
	for g.Stats().Pushed < queues*producers*n/2 {
		runtime.Gosched()
	}
	g.Close()
	wg.Wait()
	<-consumed
	accepted.Range(func(k, v any) bool {
		p, want := k.(int), v.(int)
		if len(got[p]) != want {
			t.Errorf("producer %d: %d items taken, %d accepted", p, len(got[p]), want)
		}
		for i, v := range got[p] {
			if v != i {
				t.Fatalf("producer %d: item %d is %d", p, i, v)
			}
		}
		return true
	})
	if s := g.Stats(); s.MaxDepth > 8 {
		t.Errorf("stats %+v", s)
	}
}

func syncMapKeys(m *sync.Map) (keys []any) {
	m.Range(func(k, _ any) bool { keys = append(keys, k); return true })
	return keys
}
