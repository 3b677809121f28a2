package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// msg is a test item: a delta (text) of a stream, or a lifecycle item.
type msg struct {
	stream string
	text   string
	life   bool // never merges
	drop   bool // may be dropped
}

func delta(stream, text string) msg { return msg{stream: stream, text: text} }
func life(stream, text string) msg  { return msg{stream: stream, text: text, life: true} }

// mergeMsg joins a delta into the latest queued delta of its stream,
// passing items of other streams only.
func mergeMsg(prev *msg, next msg) Verdict {
	switch {
	case next.life || next.drop:
		return Stop
	case prev.stream != next.stream:
		return Skip
	case prev.life || prev.drop:
		return Stop
	}
	prev.text += next.text
	return Merged
}

func show(ms []msg) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.stream+"="+m.text)
	}
	return strings.Join(s, " ")
}

func newMsgQueue(o Options[msg]) *Queue[msg] {
	if o.Merge == nil {
		o.Merge = mergeMsg
	}
	o.Drop = func(m msg) bool { return m.drop }
	return New(o)
}

// pushAsync pushes in a goroutine; the channel delivers Push's error.
func pushAsync[T any](q *Queue[T], v T) <-chan error {
	done := make(chan error, 1)
	go func() { done <- q.Push(v) }()
	return done
}

// waiting reports whether done has not delivered once every goroutine of
// the bubble is blocked.
func waiting(done <-chan error) bool {
	synctest.Wait()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func take[T any](t *testing.T, q *Queue[T]) []T {
	t.Helper()
	b, err := q.Take(context.Background())
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	return b
}

func TestFIFO(t *testing.T) {
	q := newMsgQueue(Options[msg]{Capacity: 4})
	for _, m := range []msg{life("a", "1"), delta("a", "2"), delta("b", "3")} {
		if err := q.Push(m); err != nil {
			t.Fatal(err)
		}
	}
	if got := show(take(t, q)); got != "a=1 a=2 b=3" {
		t.Fatalf("batch %s", got)
	}
	q.Push(delta("a", "4"))
	if got := show(take(t, q)); got != "a=4" {
		t.Fatalf("batch %s", got)
	}
	if s := q.Stats(); s != (Stats{Pushed: 4, MaxDepth: 3}) {
		t.Errorf("stats %+v", s)
	}
}

// Deltas merge only once the queue is full (a client that keeps up gets
// every delta as it came), and never past an item of their own stream.
func TestMergeWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newMsgQueue(Options[msg]{Capacity: 3})
		q.Push(delta("a", "x"))
		q.Push(delta("b", "p"))
		q.Push(delta("a", "y")) // not full yet: queued
		q.Push(delta("a", "z")) // joins the latest "a"
		q.Push(delta("b", "q")) // passes "a" items
		if q.Len() != 3 {
			t.Fatalf("len %d", q.Len())
		}
		if isClosed(q.Blocked()) {
			t.Fatal("Blocked closed before a push waited")
		}
		// Lifecycle: waits (Block).
		done := pushAsync(q, life("a", "end"))
		if !waiting(done) {
			t.Fatal("lifecycle push returned on a full queue")
		}
		if !isClosed(q.Blocked()) {
			t.Fatal("Blocked not closed while a push waits")
		}
		if got := show(take(t, q)); got != "a=x b=pq a=yz" {
			t.Fatalf("batch %s", got)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if s := q.Stats(); s.Merged != 2 || s.Pushed != 6 || s.Waited != 1 || s.MaxDepth != 3 {
			t.Errorf("stats %+v", s)
		}
	})
}

// MergeTail: below capacity a delta joins the last queued item only, when
// it is a delta of its stream; anything between (another stream, a
// lifecycle item) keeps it apart, and a taken item is never joined.
func TestMergeTail(t *testing.T) {
	q := newMsgQueue(Options[msg]{Capacity: 8, MergeTail: true})
	for _, m := range []msg{delta("a", "1"), delta("a", "2"), delta("b", "3"), delta("a", "4"),
		life("a", "end"), delta("a", "5"), delta("a", "6")} {
		if err := q.Push(m); err != nil {
			t.Fatal(err)
		}
	}
	if got := show(take(t, q)); got != "a=12 b=3 a=4 a=end a=56" {
		t.Fatalf("batch %s", got)
	}
	q.Push(delta("a", "7"))
	if got := show(take(t, q)); got != "a=7" {
		t.Fatalf("batch %s", got)
	}
	if s := q.Stats(); s.Pushed != 8 || s.Merged != 2 || s.MaxDepth != 5 {
		t.Errorf("stats %+v", s)
	}
}

func TestMergeScan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queued []msg
		scan   int
		merged bool
		want   string
	}{
		{"latest of its stream", []msg{delta("a", "x"), delta("a", "y")}, 64, true, "a=x a=yn"},
		{"past other streams", []msg{delta("a", "x"), delta("b", "y"), life("b", "e")}, 64, true, "a=xn b=y b=e"},
		{"not past its own lifecycle", []msg{delta("a", "x"), life("a", "e")}, 64, false, "a=x a=e"},
		{"not beyond scan", []msg{delta("a", "x"), delta("b", "y"), delta("c", "z")}, 2, false, "a=x b=y c=z"},
		{"within scan", []msg{delta("a", "x"), delta("b", "y"), delta("c", "z")}, 3, true, "a=xn b=y c=z"},
		{"none of its stream", []msg{delta("b", "y")}, 64, false, "b=y"},
		{"empty", nil, 64, false, ""},
	} {
		queued := slices.Clone(tc.queued)
		if got := Merge(queued, delta("a", "n"), mergeMsg, tc.scan); got != tc.merged {
			t.Errorf("%s: merged %v", tc.name, got)
		}
		if got := show(queued); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// A lifecycle item never merges.
	if Merge([]msg{life("a", "x")}, life("a", "y"), mergeMsg, 64) {
		t.Error("lifecycle merged")
	}
}

// On a full queue a droppable item is dropped, a lifecycle one waits
// until the consumer takes the queue's contents.
func TestDropAndBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newMsgQueue(Options[msg]{Capacity: 1})
		q.Push(life("r", "start"))
		if err := q.Push(msg{stream: "r", text: "progress", drop: true}); err != nil {
			t.Fatal(err)
		}
		done := pushAsync(q, life("r", "end"))
		if !waiting(done) {
			t.Fatal("lifecycle push on a full queue did not wait")
		}
		if s := q.Stats(); s.Dropped != 1 || s.Waited != 1 {
			t.Errorf("stats %+v", s)
		}
		if got := show(take(t, q)); got != "r=start" {
			t.Fatalf("batch %s", got)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := show(take(t, q)); got != "r=end" {
			t.Fatalf("batch %s", got)
		}
	})
}

// Several producers wait on one full queue; one take lets them all try
// again.
func TestBlockManyProducers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[int]{Capacity: 2})
		q.Push(0)
		q.Push(1)
		var dones []<-chan error
		for i := 2; i < 6; i++ {
			dones = append(dones, pushAsync(q, i))
		}
		synctest.Wait()
		if s := q.Stats(); s.Waited != 4 {
			t.Fatalf("waited %d", s.Waited)
		}
		var got []int
		for len(got) < 6 {
			got = append(got, take(t, q)...)
		}
		for _, d := range dones {
			if err := <-d; err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(got[2:])
		if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
			t.Fatalf("took %v", got)
		}
		if s := q.Stats(); s.MaxDepth != 2 {
			t.Errorf("max depth %d, bound 2", s.MaxDepth)
		}
	})
}

// A consumer busy with its batch holds up no producer while the queue has
// room: Push runs none of the consumer's code and never waits for it.
func TestConsumerBusyProducerGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[int]{Capacity: 8})
		release := make(chan struct{})
		consumed := make(chan int)
		go func() {
			n := 0
			for {
				b, err := q.Take(context.Background())
				if err != nil {
					consumed <- n
					return
				}
				n += len(b)
				<-release // a slow write
			}
		}()
		q.Push(0)
		synctest.Wait() // the consumer took it and is writing
		for i := 1; i <= 8; i++ {
			if err := q.Push(i); err != nil {
				t.Fatal(err)
			}
		}
		if s := q.Stats(); s.Waited != 0 {
			t.Fatalf("a push waited for a busy consumer: %+v", s)
		}
		q.Close()
		close(release)
		if n := <-consumed; n != 9 {
			t.Fatalf("consumed %d", n)
		}
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[int]{Capacity: 1})
		q.Push(1)
		done := pushAsync(q, 2)
		synctest.Wait()
		q.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Fatalf("waiting push after Close: %v", err)
		}
		if err := q.Push(3); !errors.Is(err, ErrClosed) {
			t.Fatalf("push after Close: %v", err)
		}
		// What was queued is still taken.
		if b := take(t, q); !slices.Equal(b, []int{1}) {
			t.Fatalf("batch %v", b)
		}
		if _, err := q.Take(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("take after the last item: %v", err)
		}
	})
}

// Close wakes a consumer waiting for items.
func TestCloseWakesTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[int]{})
		done := make(chan error, 1)
		go func() {
			_, err := q.Take(context.Background())
			done <- err
		}()
		synctest.Wait()
		q.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Fatalf("take: %v", err)
		}
	})
}

func TestAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[int]{Capacity: 1})
		q.Push(1)
		done := pushAsync(q, 2)
		synctest.Wait()
		gone := errors.New("client gone")
		q.Abort(gone)
		q.Abort(errors.New("later")) // the first error stays
		if err := <-done; err != gone {
			t.Fatalf("waiting push after Abort: %v", err)
		}
		if err := q.Push(3); err != gone {
			t.Fatalf("push after Abort: %v", err)
		}
		// What was queued is discarded.
		if b, err := q.Take(context.Background()); err != gone || b != nil {
			t.Fatalf("take after Abort: %v %v", b, err)
		}
		if q.Len() != 0 {
			t.Fatal("items kept")
		}
		// Abort after Close: Take stops at once.
		q = New(Options[int]{})
		q.Push(1)
		q.Close()
		q.Abort(nil)
		if _, err := q.Take(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("take: %v", err)
		}
	})
}

// A Disconnect queue never makes its producer wait: it holds up to
// Factor×Capacity items, then cuts the consumer off. Deltas still merge
// once it is past Capacity.
func TestDisconnect(t *testing.T) {
	q := newMsgQueue(Options[msg]{Capacity: 2, Factor: 3, Overflow: Disconnect})
	q.Push(delta("b", "x"))
	for i := range 5 {
		if err := q.Push(life("a", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Push(delta("b", "y")); err != nil { // merges (past "a" items)
		t.Fatal(err)
	}
	if err := q.Push(life("a", "5")); !errors.Is(err, ErrLagging) {
		t.Fatalf("push past the hard bound: %v", err)
	}
	if _, err := q.Take(context.Background()); !errors.Is(err, ErrLagging) {
		t.Fatalf("take of a lagging consumer: %v", err)
	}
	if err := q.Push(life("a", "6")); !errors.Is(err, ErrLagging) {
		t.Fatalf("push after the cut: %v", err)
	}
	if s := q.Stats(); !s.Lagged || s.Merged != 1 || s.MaxDepth != 6 || s.Pushed != 7 {
		t.Errorf("stats %+v", s)
	}
	q.Abort(nil) // unsubscribing keeps why it ended
	if _, err := q.Take(context.Background()); !errors.Is(err, ErrLagging) || !q.Stats().Lagged {
		t.Fatalf("take after Abort: %v", err)
	}
}

func TestDisconnectAtBound(t *testing.T) {
	q := New(Options[int]{Capacity: 2, Factor: 3, Overflow: Disconnect})
	for i := range 6 {
		if err := q.Push(i); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	if err := q.Push(6); !errors.Is(err, ErrLagging) {
		t.Fatalf("push 6: %v", err)
	}
}

func TestTakeOrIdleAndContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := New(Options[int]{})
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		start := time.Now()
		b, err := q.TakeOr(context.Background(), tick.C)
		if b != nil || err != nil || time.Since(start) != time.Minute {
			t.Fatalf("idle: %v %v after %v", b, err, time.Since(start))
		}
		q.Push(1)
		if b, err := q.TakeOr(context.Background(), tick.C); err != nil || len(b) != 1 {
			t.Fatalf("take: %v %v", b, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := q.Take(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("take with an ended context: %v", err)
		}
	})
}

// A batch is valid until the next Take, which reuses small room, clears
// it, and does not keep a big one.
func TestBatchRoom(t *testing.T) {
	q := New(Options[*int]{})
	one := new(int)
	q.Push(one)
	b1 := take(t, q)
	q.Push(new(int))
	q.Push(new(int))
	if b1[0] != one {
		t.Fatal("the batch changed before the next Take")
	}
	take(t, q) // reuses b1's room, cleared
	if b1[0] != nil {
		t.Fatal("the reused room keeps a reference")
	}
	// While batches are big, their room is reused; once they are small
	// again, the big room goes.
	big := func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return cap(q.items) > 2*keep || cap(q.spare) > 2*keep
	}
	for range 3 {
		for range 2*keep + 1 {
			q.Push(new(int))
		}
		take(t, q)
	}
	if !big() {
		t.Error("no room kept for big batches while they come")
	}
	for range calmBatches + 1 {
		q.Push(new(int))
		take(t, q)
	}
	if big() {
		t.Error("the queue keeps room for more than 2×keep items after the burst")
	}
}

// Steady state: pushing and taking allocate nothing.
func TestAllocs(t *testing.T) {
	q := newMsgQueue(Options[msg]{Capacity: 4})
	m := delta("a", "")
	round := func() {
		for range 4 {
			q.Push(m)
		}
		q.Push(m) // merges: "" + "" allocates nothing
		q.Take(context.Background())
	}
	round()
	round()
	if n := testing.AllocsPerRun(100, round); n != 0 {
		t.Errorf("%v allocs per round", n)
	}
	g := NewGroup[msg]()
	qs := []*Queue[msg]{New(Options[msg]{Group: g, Merge: mergeMsg}), New(Options[msg]{Group: g, Merge: mergeMsg})}
	round = func() {
		for _, q := range qs {
			q.Push(m)
			q.Push(m)
		}
		g.Take(context.Background())
		g.Take(context.Background())
	}
	round()
	round()
	if n := testing.AllocsPerRun(100, round); n != 0 {
		t.Errorf("%v allocs per group round", n)
	}
}

// item is a concurrency test item: producer p's numbers, merged.
type item struct {
	p    int
	nums []int
	life bool
}

func mergeItem(prev *item, next item) Verdict {
	switch {
	case next.life:
		return Stop
	case prev.p != next.p:
		return Skip
	case prev.life:
		return Stop
	}
	prev.nums = append(prev.nums, next.nums...)
	return Merged
}

// check verifies that every producer's numbers came in order, none lost.
func check(t *testing.T, got map[int][]int, producers, n int) {
	t.Helper()
	for p := range producers {
		if len(got[p]) != n {
			t.Fatalf("producer %d: %d items, want %d", p, len(got[p]), n)
		}
		for i, v := range got[p] {
			if v != i {
				t.Fatalf("producer %d: item %d is %d", p, i, v)
			}
		}
	}
}

// Many producers, one slow consumer, small bound: under -race, order per
// producer, nothing lost, the bound held.
func TestConcurrentBlock(t *testing.T) {
	const producers, n = 8, 2000
	q := New(Options[item]{Capacity: 16, Merge: mergeItem})
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range n {
				if err := q.Push(item{p: p, nums: []int{i}, life: i%10 == 0}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	got := map[int][]int{}
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			b, err := q.Take(context.Background())
			if err != nil {
				return
			}
			for _, it := range b {
				got[it.p] = append(got[it.p], it.nums...)
			}
			if len(b) > 16 {
				t.Errorf("batch of %d, bound 16", len(b))
			}
		}
	}()
	wg.Wait()
	q.Close()
	<-consumed
	check(t, got, producers, n)
	s := q.Stats()
	if s.MaxDepth > 16 || s.Pushed != producers*n {
		t.Errorf("stats %+v", s)
	}
	t.Logf("stats %+v", s)
}

// Several Disconnect queues (subscribers), one producer: the fast ones get
// everything, the one that reads nothing is cut off, the producer never
// waits.
func TestConcurrentDisconnect(t *testing.T) {
	const subs, n = 4, 5000
	var qs []*Queue[item]
	got := make([]map[int][]int, subs)
	// took[i] is signalled after each Take of subscriber i: the producer
	// that finds its queue nearly full waits on it rather than polling.
	took := make([]chan struct{}, subs)
	var wg sync.WaitGroup
	for i := range subs {
		q := New(Options[item]{Capacity: 8, Factor: 4, Overflow: Disconnect, Merge: mergeItem})
		qs = append(qs, q)
		got[i] = map[int][]int{}
		took[i] = make(chan struct{}, 1)
		wg.Go(func() {
			for {
				b, err := q.Take(context.Background())
				select {
				case took[i] <- struct{}{}:
				default:
				}
				if err != nil {
					return
				}
				for _, it := range b {
					got[i][it.p] = append(got[i][it.p], it.nums...)
				}
			}
		})
	}
	stalled := New(Options[item]{Capacity: 8, Factor: 4, Overflow: Disconnect, Merge: mergeItem})
	for i := range n {
		for j, q := range qs {
			for q.Len() >= 8*4-1 { // a fast consumer: not cut off
				<-took[j] // a Take since (or just before) Len
			}
			q.Push(item{p: i % 3, nums: []int{i / 3}, life: i%7 == 0})
		}
		stalled.Push(item{p: i % 3, nums: []int{i / 3}, life: i%7 == 0})
	}
	for _, q := range qs {
		q.Close()
	}
	wg.Wait()
	for i := range subs {
		if qs[i].Stats().Lagged {
			t.Fatalf("subscriber %d cut off", i)
		}
		for p := range 3 {
			if want := (n - p + 2) / 3; len(got[i][p]) != want {
				t.Fatalf("subscriber %d, producer %d: %d items, want %d", i, p, len(got[i][p]), want)
			}
			for j, v := range got[i][p] {
				if v != j {
					t.Fatalf("subscriber %d, producer %d: item %d is %d", i, p, j, v)
				}
			}
		}
	}
	if s := stalled.Stats(); !s.Lagged || s.MaxDepth != 32 {
		t.Fatalf("stalled subscriber: %+v", s)
	}
}

// isClosed reports whether c is closed, without waiting.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestMergeByStream: with Stream, a delta joins the latest queued item of
// its stream however far back it lies (the scan would stop after Scan
// items of other streams), never past an item of its own stream that
// does not take it; after a take the index starts again.
func TestMergeByStream(t *testing.T) {
	const streams = 200
	q := newMsgQueue(Options[msg]{Capacity: streams + 1, Scan: 4, Overflow: Disconnect, Stream: func(m msg) string { return m.stream }})
	for i := range streams {
		q.Push(delta(fmt.Sprint("s", i), "a"))
	}
	q.Push(life("s1", "end")) // s1's latest item is now one that merges nothing
	// Full: each stream's delta joins its first one, 200 items back for
	// s0; s1's is queued after its lifecycle item (Disconnect: no wait).
	for i := range streams {
		if err := q.Push(delta(fmt.Sprint("s", i), "b")); err != nil {
			t.Fatal(err)
		}
	}
	got := take(t, q)
	if len(got) != streams+2 || got[0].text != "ab" || got[1].text != "a" || got[streams-1].text != "ab" || show(got[streams:]) != "s1=end s1=b" {
		t.Fatalf("%d items: %s ... %s", len(got), show(got[:3]), show(got[streams-1:]))
	}
	if st := q.Stats(); st.Merged != streams-1 {
		t.Errorf("merged %d, want %d", st.Merged, streams-1)
	}
	// The taken items' index is gone: the next full queue indexes its own.
	for i := range streams + 1 {
		q.Push(delta(fmt.Sprint("u", i), "x"))
	}
	q.Push(delta("u7", "y"))
	if got := take(t, q); len(got) != streams+1 || got[7].text != "xy" {
		t.Fatalf("after a take: %d items, u7=%q", len(got), got[7].text)
	}
}
