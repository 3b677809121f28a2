package session_test

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// tailTree is a store and the helpers that grow a tree in it as a run
// elsewhere would.
type tailTree struct {
	t  *testing.T
	st session.Store
}

func newTailTree(t *testing.T) *tailTree {
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	return &tailTree{t: t, st: st}
}

func (tt *tailTree) create(id, parent string, depth int) {
	tt.t.Helper()
	if err := tt.st.CreateSession(context.Background(), session.Session{ID: id, ParentID: parent, Depth: depth, AgentName: id,
		SourceType: event.SourceAgent, Status: session.StatusRunning, CreatedAt: time.Now()}); err != nil {
		tt.t.Fatal(err)
	}
}

func (tt *tailTree) append(id string, evs ...event.Event) {
	tt.t.Helper()
	if err := tt.st.AppendEvents(context.Background(), id, evs...); err != nil {
		tt.t.Fatal(err)
	}
}

// spawn creates child under parent and appends its start to parent's log.
func (tt *tailTree) spawn(parent, child, call string, depth int) {
	tt.t.Helper()
	tt.create(child, parent, depth)
	tt.append(parent, event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: parent, ToolCallID: call,
		SpawnMechanism: event.MechanismTask, RunMode: event.RunModeSync, SourceName: child, SourceType: event.SourceAgent, Depth: depth})
}

func (tt *tailTree) end(parent, child, call string, depth int) {
	tt.t.Helper()
	tt.append(parent, event.SpawnSessionEnd{ChildSessionID: child, ParentSessionID: parent, ToolCallID: call,
		SourceName: child, SourceType: event.SourceAgent, Depth: depth, StopReason: event.StopCompleted})
}

func text(s string) event.Event {
	return event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: s}}
}

// Polled step by step while the tree grows (a child, a grandchild, their
// ends), a tail hands on every event once, in store-wide order, wrapped
// as ReplayTree wraps them: the concatenation of its polls is the replay
// of the whole tree. A notice of a session concerns the tail once it
// found that session.
func TestTreeTailFollowsAGrowingTree(t *testing.T) {
	ctx := context.Background()
	tt := newTailTree(t)
	tt.create("root", "", 0)
	tt.append("root", event.RunStarted{RunID: "r1", SessionID: "root"}, text("before"))
	tail := session.NewTreeTail(tt.st, "root", 0)
	if tail.Root() != "root" {
		t.Errorf("Root() = %q", tail.Root())
	}
	var got []session.Replayed
	poll := func(want int) {
		t.Helper()
		rs, err := tail.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != want {
			t.Fatalf("a poll handed on %d events, want %d: %+v", len(rs), want, rs)
		}
		got = append(got, rs...)
	}
	poll(2)
	poll(0)
	tt.spawn("root", "kid", "c1", 1)
	tt.append("kid", text("kid says"))
	if tail.Has("kid") {
		t.Error("Has(kid) before a poll read its start")
	}
	poll(2)
	if !tail.Has("kid") || !tail.Has("root") || tail.Has("elsewhere") {
		t.Errorf("Has: root %v, kid %v, elsewhere %v", tail.Has("root"), tail.Has("kid"), tail.Has("elsewhere"))
	}
	// A grandchild's start and events, its end and the child's end in
	// one poll: parents first, each found in the poll that reads it.
	tt.spawn("kid", "grand", "c2", 2)
	tt.append("grand", text("grand says"))
	tt.append("root", text("root meanwhile"))
	tt.end("kid", "grand", "c2", 2)
	tt.end("root", "kid", "c1", 1)
	tt.append("root", event.StreamComplete{})
	poll(6)

	want, err := session.ReplayTree(ctx, tt.st, "root")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the tail's polls differ from the replay of the tree:\n got %+v\nwant %+v", got, want)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Record.GlobalSeq <= got[i-1].Record.GlobalSeq {
			t.Errorf("event %d is out of store-wide order", i)
		}
	}
	w, ok := got[5].Event.(event.Subagent)
	if !ok || w.ChildSessionID != "grand" || w.ParentSessionID != "kid" || w.Depth != 2 || w.ToolCallID != "c2" ||
		!reflect.DeepEqual(w.Path, []string{"kid", "grand"}) {
		t.Errorf("the grandchild's event: %+v", got[5].Event)
	}
}

// The first poll starts after afterSeq in the root's log (a run continued
// from its last run_started), but reads a child it finds from its start.
func TestTreeTailAfterSeq(t *testing.T) {
	tt := newTailTree(t)
	tt.create("root", "", 0)
	tt.append("root", text("an earlier run"), event.RunStarted{RunID: "r2", SessionID: "root"})
	tt.spawn("root", "kid", "c1", 1)
	tt.append("kid", text("one"), text("two"))
	rs, err := session.NewTreeTail(tt.st, "root", 1).Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, r := range rs {
		seqs = append(seqs, r.Record.Seq)
	}
	if !reflect.DeepEqual(seqs, []int64{2, 3, 1, 2}) {
		t.Errorf("seqs handed on: %v, want the root's from 2 and the child's from 1", seqs)
	}
}

// failing fails the reads of one session's log while fail is set.
type failing struct {
	session.Store
	sid  string
	fail bool
}

var errRead = errors.New("read refused")

func (f *failing) Events(ctx context.Context, sid string, after int64) ([]session.Record, error) {
	if f.fail && sid == f.sid {
		return nil, errRead
	}
	return f.Store.Events(ctx, sid, after)
}

// A poll whose read fails part way hands on nothing, and loses nothing:
// the next poll hands on what the failed one had read, with the rest.
func TestTreeTailReadsAgainAfterAFailedRead(t *testing.T) {
	ctx := context.Background()
	tt := newTailTree(t)
	tt.create("root", "", 0)
	f := &failing{Store: tt.st, sid: "kid"}
	tail := session.NewTreeTail(f, "root", 0)
	tt.spawn("root", "kid", "c1", 1)
	tt.append("kid", text("kid"))
	tt.append("root", text("root"))
	f.fail = true
	if rs, err := tail.Poll(ctx); !errors.Is(err, errRead) || len(rs) != 0 {
		t.Fatalf("a poll with a failed read: %d events, err %v", len(rs), err)
	}
	f.fail = false
	rs, err := tail.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := session.ReplayTree(ctx, tt.st, "root")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rs, want) {
		t.Errorf("after a failed read:\n got %+v\nwant %+v", rs, want)
	}
}

// counting counts the reads of each session's log.
type counting struct {
	session.Store
	reads map[string]int
}

func (c *counting) Events(ctx context.Context, sid string, after int64) ([]session.Record, error) {
	c.reads[sid]++
	return c.Store.Events(ctx, sid, after)
}

// A poll that reads a child's end (its parent's spawn_session_end) hands
// on the child's last events, and the polls after it no longer read the
// child's log; a child started again (a resumed child: its start once
// more) is read again, from where it was.
func TestTreeTailStopsReadingEndedChildren(t *testing.T) {
	ctx := context.Background()
	tt := newTailTree(t)
	tt.create("root", "", 0)
	c := &counting{Store: tt.st, reads: map[string]int{}}
	tail := session.NewTreeTail(c, "root", 0)
	var got []session.Replayed
	poll := func() {
		t.Helper()
		rs, err := tail.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rs...)
	}
	tt.spawn("root", "kid", "c1", 1)
	tt.spawn("root", "other", "c2", 1)
	poll()
	tt.append("kid", text("last words"))
	tt.end("root", "kid", "c1", 1)
	poll() // reads the end, then the kid's last words
	reads := c.reads["kid"]
	poll()
	poll()
	if c.reads["kid"] != reads || c.reads["other"] != reads+2 {
		t.Errorf("after its end the kid's log was read %d times more, the running child's %d (want 0 and 2)",
			c.reads["kid"]-reads, c.reads["other"]-reads)
	}
	// Resumed: started again, read again, its new events handed on once.
	tt.append("root", event.SpawnSessionStart{ChildSessionID: "kid", ParentSessionID: "root", ToolCallID: "c3",
		SpawnMechanism: event.MechanismTask, RunMode: event.RunModeSync, SourceName: "kid", SourceType: event.SourceAgent, Depth: 1})
	tt.append("kid", text("again"))
	poll()
	if c.reads["kid"] != reads+1 {
		t.Errorf("the resumed kid's log was read %d times, want 1", c.reads["kid"]-reads)
	}
	tt.end("root", "kid", "c3", 1)
	tt.end("root", "other", "c2", 1)
	poll()
	want, err := session.ReplayTree(ctx, tt.st, "root")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the tail's polls differ from the replay of the tree:\n got %+v\nwant %+v", got, want)
	}
}

// many is a store that reads several sessions at once (as the memory
// store has no snapshot, only for a tree that does not change during a
// read), counting its reads by session.
type many struct {
	session.Store
	reads, single map[string]int
}

func (m *many) Events(ctx context.Context, sid string, after int64) ([]session.Record, error) {
	m.single[sid]++
	return m.Store.Events(ctx, sid, after)
}

func (m *many) EventsOfMany(ctx context.Context, after map[string]int64) ([]session.Record, error) {
	var out []session.Record
	for sid, seq := range after {
		m.reads[sid]++
		recs, err := m.Store.Events(ctx, sid, seq)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	slices.SortFunc(out, func(a, b session.Record) int { return cmp.Compare(a.GlobalSeq, b.GlobalSeq) })
	return out, nil
}

// With a store that reads several sessions at once, the polls after the
// first read the tree in rounds (the known sessions, then the children
// they found) and hand on what the one-by-one reads do: the tree's
// replay; an ended child is no longer read, a child started and ended
// between two polls is read in the poll that finds it.
func TestTreeTailReadsManyAtOnce(t *testing.T) {
	ctx := context.Background()
	tt := newTailTree(t)
	tt.create("root", "", 0)
	m := &many{Store: tt.st, reads: map[string]int{}, single: map[string]int{}}
	tail := session.NewTreeTail(wrapper{m}, "root", 0)
	var got []session.Replayed
	poll := func() {
		t.Helper()
		rs, err := tail.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rs...)
	}
	tt.append("root", event.RunStarted{RunID: "r1", SessionID: "root"})
	poll() // the first: one by one
	tt.spawn("root", "kid", "c1", 1)
	tt.append("kid", text("kid says"))
	poll()
	// A grandchild started, speaking and ended, and the kid ended, all
	// between two polls: found and read in that poll's rounds.
	tt.spawn("kid", "grand", "c2", 2)
	tt.append("grand", text("grand says"))
	tt.end("kid", "grand", "c2", 2)
	tt.end("root", "kid", "c1", 1)
	tt.spawn("root", "other", "c3", 1)
	poll()
	reads := m.reads["kid"]
	tt.append("other", text("still here"))
	tt.end("root", "other", "c3", 1)
	tt.append("root", event.StreamComplete{})
	poll()
	if m.single["root"] != 1 || m.single["kid"] != 0 {
		t.Errorf("one-by-one reads: root %d (want 1: the first poll), kid %d (want 0)", m.single["root"], m.single["kid"])
	}
	if m.reads["kid"] != reads || m.reads["grand"] != 1 {
		t.Errorf("reads after their ends: kid %d more, grand %d in all (want 0 and 1)", m.reads["kid"]-reads, m.reads["grand"])
	}
	want, err := session.ReplayTree(ctx, tt.st, "root")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the tail's polls differ from the replay of the tree:\n got %+v\nwant %+v", got, want)
	}
}

// An event a child's log holds wrapped already (an older producer wrote
// it so) is handed on with the child's path prefixed, never wrapped twice.
func TestTreeTailNeverWrapsTwice(t *testing.T) {
	tt := newTailTree(t)
	tt.create("root", "", 0)
	tt.spawn("root", "kid", "c1", 1)
	tt.append("kid", event.Subagent{SourceName: "grand", SourceType: event.SourceAgent, Depth: 2, ChildSessionID: "grand",
		ParentSessionID: "kid", Path: []string{"grand"}, Event: text("old")})
	rs, err := session.NewTreeTail(tt.st, "root", 0).Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d events, want 2", len(rs))
	}
	w, ok := rs[1].Event.(event.Subagent)
	if !ok || w.ChildSessionID != "grand" || !reflect.DeepEqual(w.Path, []string{"kid", "grand"}) || w.Event != text("old") {
		t.Errorf("a wrapped event of a child's log: %+v", rs[1].Event)
	}
}

type notifying struct{ session.Store }

func (notifying) SubscribeEvents(context.Context) (<-chan string, error) { return nil, nil }

type wrapper struct{ session.Store }

func (w wrapper) Unwrap() session.Store { return w.Store }

// Notifier finds a store's notices through wrappers that say what they
// wrap, and no notices where there are none.
func TestNotifierThroughWrappers(t *testing.T) {
	st := memory.New()
	defer st.Close()
	if session.Notifier(wrapper{wrapper{notifying{st}}}) == nil {
		t.Error("a wrapped notifying store is not seen as one")
	}
	if session.Notifier(wrapper{st}) != nil || session.Notifier(st) != nil {
		t.Error("a store without notices is seen as notifying")
	}
}
