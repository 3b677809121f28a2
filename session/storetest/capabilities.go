package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// Capabilities declares where a store legitimately differs from the
// others. The suite runs the cases a capability enables and skips the
// others with the reason, so a store's own tests need no workaround.
type Capabilities struct {
	// MaxRoots is the number of finished roots the store keeps (the memory
	// store's bounded retention); 0 keeps every one.
	MaxRoots int
	// OpenShared opens a second store on the data of st, as another
	// process would (a file, a database); nil for a store whose data lives
	// and dies with it. Claims and committed writes are seen across them.
	OpenShared func(t *testing.T, st session.Store) session.Store
	// DeferredCommits: the store honours session.WriteOptions.DeferCommits (answers a
	// write once applied, commits it by the next Flush or Release).
	DeferredCommits bool
	// Notifies: the store implements session.EventNotifier.
	Notifies bool
}

// capCase is a case that runs only when the store declares a capability.
type capCase struct {
	name string
	// skip returns why the case does not apply to a store, "" when it does.
	skip func(Capabilities) string
	fn   func(t *testing.T, caps Capabilities, st session.Store)
}

var capCases = []capCase{
	{"ManyRoots", func(c Capabilities) string {
		if c.MaxRoots > 0 && c.MaxRoots < manyRoots {
			return fmt.Sprintf("the store keeps only %d finished roots (MaxRoots)", c.MaxRoots)
		}
		return ""
	}, testManyRoots},
	{"RootRetention", func(c Capabilities) string {
		if c.MaxRoots <= 0 {
			return "the store keeps every finished root (Capabilities.MaxRoots is 0)"
		}
		return ""
	}, testRootRetention},
	{"NoNotices", func(c Capabilities) string {
		if c.Notifies {
			return "the store declares session.EventNotifier (Capabilities.Notifies)"
		}
		return ""
	}, testNoNotices},
	{"SharedClaims", needShared, testSharedClaims},
	{"SharedReads", needShared, testSharedReads},
	{"SharedCaptures", needShared, testSharedCaptures},
	{"DeferredCommits", func(c Capabilities) string {
		if !c.DeferredCommits {
			return "the store ignores session.WriteOptions.DeferCommits (Capabilities.DeferredCommits)"
		}
		return ""
	}, testDeferredCommits},
	{"SubscribeEvents", func(c Capabilities) string {
		if !c.Notifies {
			return "the store does not implement session.EventNotifier (Capabilities.Notifies)"
		}
		return ""
	}, testSubscribeEvents},
}

func needShared(c Capabilities) string {
	if c.OpenShared == nil {
		return "the store's data is not shared with another store (Capabilities.OpenShared)"
	}
	return ""
}

const manyRoots = 1100

// Every finished root is kept by a store without a retention bound.
func testManyRoots(t *testing.T, _ Capabilities, st session.Store) {
	ctx := context.Background()
	for i := range manyRoots {
		s := newSession(fmt.Sprintf("ses_%04d", i), "", 0, base)
		s.Status = session.StatusCompleted
		mustCreate(t, st, s)
	}
	roots, err := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
	if err != nil || len(roots) != manyRoots {
		t.Fatalf("%d finished roots listed (%v), want %d", len(roots), err, manyRoots)
	}
}

// A store with a retention bound keeps MaxRoots roots: beside one running
// root, the MaxRoots-1 newest finished ones (at least the one just
// created: a root is dropped to make room, never after its creation); the
// oldest finished trees are dropped whole, the running root never.
func testRootRetention(t *testing.T, caps Capabilities, st session.Store) {
	ctx := context.Background()
	n := caps.MaxRoots
	running := newSession("ses_run", "", 0, base)
	mustCreate(t, st, running) // the oldest root, but running: kept
	for i := range n + 3 {
		s := newSession(fmt.Sprintf("ses_%04d", i), "", 0, base.Add(time.Duration(i+1)*time.Second))
		s.Status = session.StatusCompleted
		mustCreate(t, st, s)
		if i == 0 {
			mustCreate(t, st, newSession("ses_0000_child", s.ID, 1, s.CreatedAt))
		}
	}
	roots, err := st.ListSessions(ctx, session.ListOptions{RootsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	finished := 0
	for _, r := range roots {
		if r.Status != session.StatusRunning {
			finished++
		}
	}
	if want := max(n-1, 1); finished != want || len(roots) != want+1 {
		t.Fatalf("%d roots kept, %d of them finished; want %d finished (MaxRoots %d) and the running one", len(roots), finished, want, n)
	}
	if _, err := st.GetSession(ctx, running.ID); err != nil {
		t.Fatalf("the running root was dropped: %v", err)
	}
	newest := fmt.Sprintf("ses_%04d", n+2)
	if _, err := st.GetSession(ctx, newest); err != nil {
		t.Fatalf("the newest root %s was dropped: %v", newest, err)
	}
	for _, id := range []string{"ses_0000", "ses_0000_child"} {
		if _, err := st.GetSession(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Fatalf("GetSession of %s, of the oldest finished tree, = %v, want ErrNotFound", id, err)
		}
	}
}

// A store that does not declare Notifies does not implement
// session.EventNotifier: a caller that type-asserts for notices (a
// follower) falls back to reading, as the flag says.
func testNoNotices(t *testing.T, _ Capabilities, st session.Store) {
	if _, ok := st.(session.EventNotifier); ok {
		t.Fatalf("%T implements session.EventNotifier but does not declare Notifies", st)
	}
}

func openShared(t *testing.T, caps Capabilities, st session.Store) session.Store {
	t.Helper()
	other := caps.OpenShared(t, st)
	t.Cleanup(func() {
		if err := other.Close(); err != nil {
			t.Errorf("Close of the shared store: %v", err)
		}
	})
	return other
}

// A claim keeps another store on the same data out until it is released.
func testSharedClaims(t *testing.T, caps Capabilities, st session.Store) {
	ctx := context.Background()
	other := openShared(t, caps, st)
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	if err := st.Claim(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	if err := other.Claim(ctx, "ses_1"); !errors.Is(err, session.ErrRunning) {
		t.Fatalf("Claim by another store of a held session = %v, want ErrRunning", err)
	}
	if err := st.Release(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	if err := other.Claim(ctx, "ses_1"); err != nil {
		t.Fatalf("Claim by another store after Release: %v", err)
	}
}

// What a store committed (Flush) another store on the same data reads.
func testSharedReads(t *testing.T, caps Capabilities, st session.Store) {
	ctx := context.Background()
	other := openShared(t, caps, st)
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{Index: 7}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.GetSession(ctx, "ses_1"); err != nil {
		t.Fatalf("the other store does not see the session: %v", err)
	}
	recs, err := other.Events(ctx, "ses_1", 0)
	if err != nil || len(recs) != 1 || recs[0].Event.(event.PartEnd).Index != 7 {
		t.Fatalf("the other store reads %+v, %v", recs, err)
	}
}

// Writes of a run that defers its commits (session.WriteOptions) are answered
// with their outcome, read back at once by the store, and committed by
// the next Flush (seen by another store on the data, when there is one).
func testDeferredCommits(t *testing.T, caps Capabilities, st session.Store) {
	ctx, _ := session.TrackWrites(context.Background(), session.WriteOptions{DeferCommits: true})
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	if err := st.CreateSession(ctx, newSession("ses_2", "ses_1", 1, base)); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(ctx, newSession("ses_2", "ses_1", 1, base)); !errors.Is(err, session.ErrExists) {
		t.Fatalf("deferred create of a taken id = %v, want ErrExists", err)
	}
	if err := st.UpdateSession(ctx, "ses_2", func(s *session.Session) { s.Title = "deferred" }); err != nil {
		t.Fatal(err)
	}
	if s, err := st.GetSession(ctx, "ses_2"); err != nil || s.Title != "deferred" {
		t.Fatalf("a deferred write is not read back: %+v, %v", s, err)
	}
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if caps.OpenShared == nil {
		return
	}
	other := openShared(t, caps, st)
	if s, err := other.GetSession(context.Background(), "ses_2"); err != nil || s.Title != "deferred" {
		t.Fatalf("a deferred write is not committed by Flush: %+v, %v", s, err)
	}
}

// A subscriber is told of an append made after SubscribeEvents returned.
func testSubscribeEvents(t *testing.T, _ Capabilities, st session.Store) {
	n, ok := st.(session.EventNotifier)
	if !ok {
		t.Fatalf("%T declares Notifies but does not implement session.EventNotifier", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	ch, err := n.SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for id := range ch {
		if id == "ses_1" {
			cancel()
			for range ch { // closed when ctx ends
			}
			return
		}
	}
	t.Fatal("the channel closed without a notice for ses_1")
}
