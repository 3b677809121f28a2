package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

var ctx = context.Background()

// tree creates a root with a child and a grandchild, each with two
// messages and three events, all of status status.
func tree(t *testing.T, st *Store, root string, status session.Status) {
	t.Helper()
	ids := []string{root, root + "_c", root + "_g"}
	for i, id := range ids {
		parent := ""
		if i > 0 {
			parent = ids[i-1]
		}
		if err := st.CreateSession(ctx, session.Session{ID: id, ParentID: parent, Depth: i, Status: session.StatusRunning}); err != nil {
			t.Fatalf("CreateSession(%s): %v", id, err)
		}
	}
	for _, id := range ids {
		if err := st.AppendMessages(ctx, id,
			session.Message{ID: "msg_1", Message: model.UserText("hi " + id)},
			session.Message{ID: "msg_2", Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{
				{Kind: model.PartToolCall, ToolCallID: "cal_1", ToolName: "x", Args: []byte(`{"a":1}`)},
			}}},
		); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := st.AppendEvents(ctx, id, event.PartEnd{Index: i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Children end before their root, as in a run.
	for i := len(ids) - 1; i >= 0; i-- {
		setStatus(t, st, ids[i], status)
	}
	st.mustBeConsistent(t)
}

func setStatus(t *testing.T, st *Store, id string, status session.Status) {
	t.Helper()
	if err := st.UpdateSession(ctx, id, func(s *session.Session) { s.Status = status }); err != nil {
		t.Fatalf("UpdateSession(%s): %v", id, err)
	}
}

// present checks that the tree of root is whole.
func present(t *testing.T, st *Store, root string) {
	t.Helper()
	for _, id := range []string{root, root + "_c", root + "_g"} {
		if _, err := st.GetSession(ctx, id); err != nil {
			t.Errorf("GetSession(%s) = %v", id, err)
		}
		if msgs, err := st.Messages(ctx, id); err != nil || len(msgs) != 2 || msgs[0].Text() != "hi "+id || string(msgs[1].Parts[0].Args) != `{"a":1}` {
			t.Errorf("Messages(%s) = %+v, %v", id, msgs, err)
		}
		if recs, err := st.Events(ctx, id, 0); err != nil || len(recs) != 3 || recs[2].Seq != 3 || recs[2].SessionID != id {
			t.Errorf("Events(%s) = %+v, %v", id, recs, err)
		}
	}
	kids, err := st.ListSessions(ctx, session.ListOptions{ParentID: root})
	if err != nil || len(kids) != 1 || kids[0].ID != root+"_c" {
		t.Errorf("children of %s = %+v, %v", root, kids, err)
	}
}

// absent checks that nothing of the tree of root is left.
func absent(t *testing.T, st *Store, root string) {
	t.Helper()
	for _, id := range []string{root, root + "_c", root + "_g"} {
		if _, err := st.GetSession(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("GetSession(%s) = %v, want ErrNotFound", id, err)
		}
		if _, err := st.Messages(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Messages(%s) = %v, want ErrNotFound", id, err)
		}
		if _, err := st.Events(ctx, id, 0); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Events(%s) = %v, want ErrNotFound", id, err)
		}
		if err := st.AppendEvents(ctx, id, event.PartEnd{}); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("AppendEvents(%s) = %v, want ErrNotFound", id, err)
		}
	}
}

// roots returns the ids of the stored roots, oldest first, and checks that
// the store holds their trees and nothing else.
func roots(t *testing.T, st *Store) []string {
	t.Helper()
	rs, err := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids) // the tests name roots in creation order
	all, _ := st.ListSessions(ctx, session.ListOptions{})
	if len(all) != 3*len(ids) {
		t.Errorf("%d sessions for %d roots of 3 sessions each", len(all), len(ids))
	}
	return ids
}

// roots2 returns the ids of the stored roots, sorted.
func roots2(st *Store) []string {
	rs, _ := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestRetentionDefault(t *testing.T) {
	if DefaultMaxRoots != 1000 {
		t.Fatalf("DefaultMaxRoots = %d", DefaultMaxRoots)
	}
	st := New()
	defer st.Close()
	for i := range DefaultMaxRoots + 5 {
		id := fmt.Sprintf("r%05d", i)
		if err := st.CreateSession(ctx, session.Session{ID: id, Status: session.StatusCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	rs, _ := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
	if len(rs) != DefaultMaxRoots {
		t.Fatalf("New() keeps %d roots, want %d", len(rs), DefaultMaxRoots)
	}
	if _, err := st.GetSession(ctx, "r00004"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("oldest roots kept: %v", err)
	}
	if _, err := st.GetSession(ctx, "r00005"); err != nil {
		t.Errorf("sixth root evicted: %v", err)
	}
	st.mustBeConsistent(t)
}

func TestRetentionEvictsOldestFinishedTrees(t *testing.T) {
	st := New(WithMaxRoots(3))
	defer st.Close()
	for i := range 5 {
		tree(t, st, fmt.Sprintf("r%d", i), session.StatusCompleted)
	}
	if got, want := roots(t, st), []string{"r2", "r3", "r4"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	absent(t, st, "r0")
	absent(t, st, "r1")
	for _, r := range []string{"r2", "r3", "r4"} {
		present(t, st, r)
	}
	// Children never count, and creating one evicts nothing.
	if err := st.CreateSession(ctx, session.Session{ID: "r2_c2", ParentID: "r2", Depth: 1}); err != nil {
		t.Fatal(err)
	}
	if got, want := roots2(st), []string{"r2", "r3", "r4"}; !slices.Equal(got, want) {
		t.Fatalf("roots after creating a child = %v, want %v", got, want)
	}
	if err := st.DeleteSession(ctx, "r2_c2"); err != nil {
		t.Fatal(err)
	}
	present(t, st, "r2")
	// An evicted parent cannot take children.
	if err := st.CreateSession(ctx, session.Session{ID: "x", ParentID: "r0"}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("child of an evicted root: %v", err)
	}
	// Idle, aborted and error roots are finished too.
	for i, status := range []session.Status{session.StatusIdle, session.StatusAborted, session.StatusError} {
		tree(t, st, fmt.Sprintf("r%d", 5+i), status)
	}
	if got, want := roots(t, st), []string{"r5", "r6", "r7"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	// An evicted id can be used again.
	tree(t, st, "r0", session.StatusCompleted)
	present(t, st, "r0")
	absent(t, st, "r5")
	st.mustBeConsistent(t)
}

func TestRetentionKeepsRunningRoots(t *testing.T) {
	st := New(WithMaxRoots(3))
	defer st.Close()
	tree(t, st, "r0", session.StatusRunning)
	for i := 1; i <= 5; i++ {
		tree(t, st, fmt.Sprintf("r%d", i), session.StatusCompleted)
	}
	// r0, older than all, runs: the finished ones go around it.
	if got, want := roots(t, st), []string{"r0", "r4", "r5"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	present(t, st, "r0")
	// Its tree still takes writes.
	if err := st.AppendEvents(ctx, "r0_g", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	recs, _ := st.Events(ctx, "r0_g", 3)
	if len(recs) != 1 || recs[0].Seq != 4 {
		t.Fatalf("events of a kept running tree = %+v", recs)
	}
	// Once finished, it is the oldest finished root: it goes first.
	setStatus(t, st, "r0", session.StatusCompleted)
	st.mustBeConsistent(t)
	tree(t, st, "r6", session.StatusCompleted)
	if got, want := roots(t, st), []string{"r4", "r5", "r6"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	absent(t, st, "r0")

	// More running roots than the limit: all are kept, and the store is
	// back to the limit once they have finished and roots are created.
	for i := 7; i <= 10; i++ {
		tree(t, st, fmt.Sprintf("r%02d", i), session.StatusRunning)
	}
	if got, want := roots(t, st), []string{"r07", "r08", "r09", "r10"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	// They finish out of order; eviction still follows creation order.
	for _, r := range []string{"r09", "r07", "r10", "r08"} {
		setStatus(t, st, r, session.StatusCompleted)
	}
	tree(t, st, "r11", session.StatusCompleted)
	if got, want := roots(t, st), []string{"r09", "r10", "r11"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	st.mustBeConsistent(t)
}

func TestRetentionResumedRootIsKept(t *testing.T) {
	st := New(WithMaxRoots(2))
	defer st.Close()
	// Resumed while still queued.
	tree(t, st, "a", session.StatusCompleted)
	tree(t, st, "b", session.StatusCompleted)
	setStatus(t, st, "a", session.StatusRunning)
	tree(t, st, "c", session.StatusCompleted)
	if got, want := roots(t, st), []string{"a", "c"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	// Finished after it was passed over, then resumed again before the
	// next eviction.
	setStatus(t, st, "a", session.StatusCompleted)
	setStatus(t, st, "a", session.StatusRunning)
	st.mustBeConsistent(t)
	tree(t, st, "d", session.StatusCompleted)
	if got, want := roots(t, st), []string{"a", "d"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	present(t, st, "a")
	// Updates that leave a finished root finished change nothing.
	setStatus(t, st, "a", session.StatusCompleted)
	setStatus(t, st, "a", session.StatusError)
	st.mustBeConsistent(t)
	tree(t, st, "e", session.StatusCompleted)
	if got, want := roots(t, st), []string{"d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	absent(t, st, "a")
	st.mustBeConsistent(t)
}

func TestRetentionDelete(t *testing.T) {
	st := New(WithMaxRoots(3))
	defer st.Close()
	tree(t, st, "r0", session.StatusRunning) // will be parked
	tree(t, st, "r1", session.StatusCompleted)
	tree(t, st, "r2", session.StatusCompleted)
	tree(t, st, "r3", session.StatusCompleted) // evicts r1, parks r0
	tree(t, st, "r4", session.StatusCompleted) // evicts r2
	if got, want := roots(t, st), []string{"r0", "r3", "r4"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	// Delete the parked root and a child (which changes no count).
	for _, id := range []string{"r0", "r3_c"} {
		if err := st.DeleteSession(ctx, id); err != nil {
			t.Fatal(err)
		}
		st.mustBeConsistent(t)
	}
	absent(t, st, "r0")
	tree(t, st, "r5", session.StatusCompleted) // fits: r3, r4, r5
	tree(t, st, "r6", session.StatusCompleted) // evicts r3
	if _, err := st.GetSession(ctx, "r3"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("r3 kept: %v", err)
	}
	// Delete a queued root behind the front one (r4).
	if err := st.DeleteSession(ctx, "r5"); err != nil {
		t.Fatal(err)
	}
	st.mustBeConsistent(t)
	absent(t, st, "r5")
	// r4 and r6 are left; one more root fits without evicting anything.
	tree(t, st, "r7", session.StatusCompleted)
	if got, want := roots(t, st), []string{"r4", "r6", "r7"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	// Delete the front root; its id, used again, is a new, newest root,
	// and eviction steps over the deleted r5 to r6.
	if err := st.DeleteSession(ctx, "r4"); err != nil {
		t.Fatal(err)
	}
	tree(t, st, "r4", session.StatusCompleted)
	tree(t, st, "r8", session.StatusCompleted) // evicts r6, the oldest
	if got, want := roots(t, st), []string{"r4", "r7", "r8"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	present(t, st, "r4")

	// Delete a ready root (parked while running, then finished).
	tree(t, st, "s0", session.StatusRunning)   // evicts r7
	tree(t, st, "s1", session.StatusCompleted) // evicts r4
	tree(t, st, "s2", session.StatusCompleted) // evicts r8
	tree(t, st, "s3", session.StatusCompleted) // parks s0, evicts s1
	if got, want := roots(t, st), []string{"s0", "s2", "s3"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	setStatus(t, st, "s0", session.StatusCompleted)
	st.mu.Lock()
	where := st.sessions["s0"].where
	st.mu.Unlock()
	if where != ready {
		t.Fatalf("s0 is in place %d, want ready", where)
	}
	if err := st.DeleteSession(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	st.mustBeConsistent(t)
	absent(t, st, "s0")
	if len(st.ready) != 0 {
		t.Errorf("ready heap keeps %d entries", len(st.ready))
	}
	tree(t, st, "s4", session.StatusCompleted) // fits
	tree(t, st, "s5", session.StatusCompleted) // evicts s2
	if got, want := roots(t, st), []string{"s3", "s4", "s5"}; !slices.Equal(got, want) {
		t.Fatalf("roots = %v, want %v", got, want)
	}
	st.mustBeConsistent(t)
}

// Many deletes from the middle of the queue and a long-running root at its
// front: the queue stays small and eviction stays in creation order.
func TestRetentionQueueStaysSmall(t *testing.T) {
	const n = 50
	st := New(WithMaxRoots(n))
	defer st.Close()
	create := func(id string, status session.Status) {
		t.Helper()
		if err := st.CreateSession(ctx, session.Session{ID: id, Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	create("long", session.StatusRunning)
	for i := range 20001 {
		create(fmt.Sprintf("r%05d", i), session.StatusCompleted)
		if i%3 == 1 {
			// Delete a root from the middle of what is kept.
			if err := st.DeleteSession(ctx, fmt.Sprintf("r%05d", i-1)); err != nil && !errors.Is(err, session.ErrNotFound) {
				t.Fatal(err)
			}
		}
		if q := len(st.queue.items); q > 4*n+64 {
			t.Fatalf("after %d roots the queue holds %d entries", i+1, q)
		}
	}
	st.mustBeConsistent(t)
	rs, _ := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
	if len(rs) != n {
		t.Fatalf("%d roots, want %d", len(rs), n)
	}
	if _, err := st.GetSession(ctx, "long"); err != nil {
		t.Fatalf("running root evicted: %v", err)
	}
	// The kept finished roots are the newest ones.
	var ids []string
	for _, r := range rs {
		if r.ID != "long" {
			ids = append(ids, r.ID)
		}
	}
	slices.Sort(ids)
	var want []string
	for i := 20000; len(want) < n-1; i-- {
		if i%3 == 0 {
			continue // deleted
		}
		want = append(want, fmt.Sprintf("r%05d", i))
	}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("kept %v\nwant %v", ids, want)
	}
}

func TestRetentionConcurrent(t *testing.T) {
	const (
		maxRoots = 10
		workers  = 8
		perW     = 60
	)
	st := New(WithMaxRoots(maxRoots))
	defer st.Close()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perW {
				root := fmt.Sprintf("w%d_%03d", w, i)
				child := root + "_c"
				// A running root is never evicted: none of these may fail.
				steps := []func() error{
					func() error { return st.CreateSession(ctx, session.Session{ID: root, Status: session.StatusRunning}) },
					func() error {
						return st.CreateSession(ctx, session.Session{ID: child, ParentID: root, Depth: 1, Status: session.StatusRunning})
					},
					func() error {
						return st.AppendMessages(ctx, root, session.Message{ID: "m", Message: model.UserText(root)})
					},
					func() error { return st.AppendEvents(ctx, child, event.PartEnd{Index: i}, event.PartEnd{Index: i + 1}) },
					func() error {
						return st.UpdateSession(ctx, child, func(s *session.Session) { s.Status = session.StatusCompleted })
					},
					func() error {
						if i%5 == 0 {
							return st.DeleteSession(ctx, root)
						}
						return st.UpdateSession(ctx, root, func(s *session.Session) { s.Status = session.StatusCompleted })
					},
				}
				for k, step := range steps {
					if err := step(); err != nil {
						t.Errorf("%s step %d: %v", root, k, err)
						return
					}
				}
			}
		})
	}
	// Readers alongside.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			rs, err := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
			if err != nil {
				t.Error(err)
				return
			}
			for _, r := range rs {
				// May be evicted meanwhile; must not fail otherwise.
				if _, err := st.Events(ctx, r.ID+"_c", 0); err != nil && !errors.Is(err, session.ErrNotFound) {
					t.Error(err)
					return
				}
			}
		}
	})
	wg.Wait()
	close(stop)
	readers.Wait()
	st.mustBeConsistent(t)
	rs, _ := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
	if len(rs) > maxRoots {
		t.Fatalf("%d roots left, limit %d", len(rs), maxRoots)
	}
	all, _ := st.ListSessions(ctx, session.ListOptions{})
	if len(all) != 2*len(rs) {
		t.Fatalf("%d sessions for %d roots of 2", len(all), len(rs))
	}
	for _, r := range rs {
		recs, err := st.Events(ctx, r.ID+"_c", 0)
		if err != nil || len(recs) != 2 {
			t.Errorf("child of %s: %d events, %v", r.ID, len(recs), err)
		}
	}
}

func TestUnboundedKeepsEverything(t *testing.T) {
	for _, n := range []int{0, -1} {
		st := New(WithMaxRoots(n))
		for i := range DefaultMaxRoots + 10 {
			if err := st.CreateSession(ctx, session.Session{ID: fmt.Sprint(i), Status: session.StatusCompleted}); err != nil {
				t.Fatal(err)
			}
		}
		rs, _ := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
		if len(rs) != DefaultMaxRoots+10 {
			t.Errorf("WithMaxRoots(%d) keeps %d roots", n, len(rs))
		}
		if len(st.queue.items) != 0 || st.roots != 0 {
			t.Errorf("WithMaxRoots(%d) tracks roots", n)
		}
		st.Close()
	}
}

// Events builds records from the compact log: per-session seq, the
// session id, one store-wide order and the append time.
func TestEventsFromCompactLog(t *testing.T) {
	st := New()
	defer st.Close()
	for _, id := range []string{"a", "b"} {
		if err := st.CreateSession(ctx, session.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		sid := "a"
		if i%2 == 1 {
			sid = "b"
		}
		if err := st.AppendEvents(ctx, sid, event.PartEnd{Index: i}); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := st.Events(ctx, "b", 4)
	if len(recs) != 6 {
		t.Fatalf("%d records after seq 4, want 6", len(recs))
	}
	for i, r := range recs {
		if r.SessionID != "b" || r.Seq != int64(5+i) || r.GlobalSeq != int64(2*(4+i)+2) || r.Event.(event.PartEnd).Index != 2*(4+i)+1 || r.Time.IsZero() {
			t.Errorf("record %d = %+v", i, r)
		}
	}
}

// Messages of one call share their buffers; a reader or a writer that
// appends to a message's parts must not reach the next message's.
func TestMessagePartsDoNotAlias(t *testing.T) {
	st := New()
	defer st.Close()
	if err := st.CreateSession(ctx, session.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	in := []session.Message{
		{ID: "1", Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartToolCall, Args: []byte(`{"x":1}`)}}}},
		{ID: "2", Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartToolCall, Args: []byte(`{"y":2}`)}, {Kind: model.PartText, Text: "t"}}}},
		{ID: "3", Message: model.Message{Role: model.RoleAssistant}},
		{ID: "4", Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartToolCall, Args: []byte{}}}}},
	}
	if err := st.AppendMessages(ctx, "s", in...); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Messages(ctx, "s")
	got[0].Parts = append(got[0].Parts, model.Part{Text: "extra"})
	got[0].Parts[0].Args = append(got[0].Parts[0].Args, "more"...)
	if string(got[1].Parts[0].Args) != `{"y":2}` || got[1].Parts[0].Kind != model.PartToolCall {
		t.Errorf("appending to a read message's parts changed the next one: %+v", got[1])
	}
	if got[2].Parts != nil {
		t.Errorf("nil parts came back as %v", got[2].Parts)
	}
	if got[3].Parts[0].Args == nil || len(got[3].Parts[0].Args) != 0 {
		t.Errorf("empty args came back as %v", got[3].Parts[0].Args)
	}
	again, _ := st.Messages(ctx, "s")
	if len(again[0].Parts) != 1 || string(again[0].Parts[0].Args) != `{"x":1}` {
		t.Errorf("first message changed: %+v", again[0])
	}
	if string(again[1].Parts[0].Args) != `{"y":2}` || again[1].Parts[1].Text != "t" {
		t.Errorf("second message changed: %+v", again[1])
	}
	st.mu.Lock()
	stored := st.sessions["s"].msgs
	st.mu.Unlock()
	if cap(stored[0].Parts) != 1 || cap(stored[0].Parts[0].Args) != len(`{"x":1}`) {
		t.Errorf("stored parts or args have room beyond their length")
	}
}

// mustBeConsistent checks the retention bookkeeping against the sessions.
func (st *Store) mustBeConsistent(t *testing.T) {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.maxRoots <= 0 {
		return
	}
	inQueue := map[*entry]int{}
	stale := 0
	for _, e := range st.queue.items[st.queue.head:] {
		if e.where == gone {
			stale++
			continue
		}
		inQueue[e]++
	}
	if stale != st.queue.stale {
		t.Errorf("queue: %d gone entries, counted %d", stale, st.queue.stale)
	}
	for _, e := range st.queue.items[:st.queue.head] {
		if e != nil {
			t.Errorf("queue keeps a consumed entry")
		}
	}
	nroots := 0
	for id, e := range st.sessions {
		if e.s.ID != id {
			t.Errorf("entry %s under key %s", e.s.ID, id)
		}
		if e.parent == nil {
			if e.s.ParentID != "" {
				t.Errorf("%s has parent id %s and no parent", id, e.s.ParentID)
			}
			nroots++
			switch e.where {
			case queued:
				if inQueue[e] != 1 {
					t.Errorf("queued root %s is %d times in the queue", id, inQueue[e])
				}
			case parked:
				if !running(e) || inQueue[e] != 0 {
					t.Errorf("parked root %s: status %s, %d times in the queue", id, e.s.Status, inQueue[e])
				}
			case ready:
				if running(e) || e.hidx < 0 || e.hidx >= len(st.ready) || st.ready[e.hidx] != e {
					t.Errorf("ready root %s: status %s, heap index %d", id, e.s.Status, e.hidx)
				}
			default:
				t.Errorf("root %s is in place %d", id, e.where)
			}
		} else {
			if e.where != untracked {
				t.Errorf("child %s is in place %d", id, e.where)
			}
			if st.sessions[e.s.ParentID] != e.parent {
				t.Errorf("child %s: parent link wrong", id)
			}
			found := false
			for c := e.parent.child; c != nil; c = c.next {
				if c.next != nil && c.next.prev != c {
					t.Errorf("sibling list of %s broken", e.parent.s.ID)
				}
				found = found || c == e
			}
			if !found {
				t.Errorf("child %s not in its parent's list", id)
			}
		}
		if e.child != nil && e.child.prev != nil {
			t.Errorf("%s: first child has a prev", id)
		}
	}
	if nroots != st.roots {
		t.Errorf("%d roots, counted %d", nroots, st.roots)
	}
	if len(inQueue) > 0 {
		for e := range inQueue {
			if st.sessions[e.s.ID] != e {
				t.Errorf("queue holds removed root %s", e.s.ID)
			}
		}
	}
	for i, e := range st.ready {
		if e.hidx != i || e.where != ready {
			t.Errorf("heap entry %d: index %d, place %d", i, e.hidx, e.where)
		}
		if i > 0 && st.ready[(i-1)/2].order > e.order {
			t.Errorf("heap order broken at %d", i)
		}
		// Every ready root is older than every queued root.
		for q := range inQueue {
			if q.order < e.order {
				t.Errorf("queued root %s older than ready root %s", q.s.ID, e.s.ID)
			}
		}
	}
}
