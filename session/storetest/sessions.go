// Conformance tests of session records: create, get, update, list, delete
// and subtrees.

package storetest

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

func testCreateGet(t *testing.T, st session.Store) {
	ctx := context.Background()
	root := newSession("ses_root", "", 0, base)
	root.Usage = event.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 5}
	root.TotalUsage = event.Usage{InputTokens: 100, OutputTokens: 200}
	root.Cost, root.TotalCost = 0.125, 1.5
	root.StopReason = event.StopCompleted
	root.DurationMS = 1234
	root.Metadata = map[string]any{"k": "v", "n": 1.5, "nested": map[string]any{"a": []any{"x", 2.0}}}
	mustCreate(t, st, root)
	got, err := st.GetSession(ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameSession(t, got, root)

	child := newSession("ses_child", root.ID, 1, base.Add(time.Second))
	mustCreate(t, st, child)
	got, err = st.GetSession(ctx, child.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameSession(t, got, child)

	// Zero times are filled in.
	before := time.Now().Add(-time.Second)
	zero := newSession("ses_zero", "", 0, time.Time{})
	mustCreate(t, st, zero)
	got, err = st.GetSession(ctx, zero.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CreatedAt.Before(before) || !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Errorf("zero times: created %v updated %v", got.CreatedAt, got.UpdatedAt)
	}

	if err := st.CreateSession(ctx, session.Session{}); err == nil {
		t.Error("CreateSession with an empty id succeeded")
	}
}

func testCreateExists(t *testing.T, st session.Store) {
	s := newSession("ses_a", "", 0, base)
	mustCreate(t, st, s)
	s.Title = "other"
	err := st.CreateSession(context.Background(), s)
	if !errors.Is(err, session.ErrExists) {
		t.Fatalf("second CreateSession = %v, want ErrExists", err)
	}
	got, _ := st.GetSession(context.Background(), s.ID)
	if got.Title != "title of ses_a" {
		t.Errorf("failed create changed the session: title %q", got.Title)
	}
}

func testCreateMissingParent(t *testing.T, st session.Store) {
	err := st.CreateSession(context.Background(), newSession("ses_orphan", "ses_nobody", 1, base))
	if !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("CreateSession with a missing parent = %v, want ErrNotFound", err)
	}
	if _, err := st.GetSession(context.Background(), "ses_orphan"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("orphan was stored: %v", err)
	}
}

func testNotFound(t *testing.T, st session.Store) {
	ctx := context.Background()
	const id = "ses_missing"
	checks := map[string]error{}
	_, checks["GetSession"] = st.GetSession(ctx, id)
	checks["UpdateSession"] = st.UpdateSession(ctx, id, func(s *session.Session) { s.Title = "x" })
	checks["DeleteSession"] = st.DeleteSession(ctx, id)
	checks["AppendMessages"] = st.AppendMessages(ctx, id, session.Message{ID: "msg_1", Message: model.UserText("hi")})
	_, checks["Messages"] = st.Messages(ctx, id)
	checks["AppendEvents"] = st.AppendEvents(ctx, id, event.PartEnd{Index: 0})
	_, checks["Events"] = st.Events(ctx, id, 0)
	for name, err := range checks {
		if !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%s on an unknown session = %v, want ErrNotFound", name, err)
		}
	}
	// Nothing was created by those calls.
	list, err := st.ListSessions(ctx, session.ListOptions{})
	if err != nil || len(list) != 0 {
		t.Errorf("ListSessions = %v, %v; want empty", list, err)
	}
}

func testUpdate(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_root", "", 0, base))
	mustCreate(t, st, newSession("ses_kid", "ses_root", 1, base.Add(time.Millisecond)))
	err := st.UpdateSession(ctx, "ses_kid", func(s *session.Session) {
		if s.ID != "ses_kid" || s.ParentID != "ses_root" || s.Depth != 1 {
			t.Errorf("fn got %+v", *s)
		}
		s.Status = session.StatusCompleted
		s.StopReason = event.StopCompleted
		s.Usage.Add(event.Usage{InputTokens: 7, OutputTokens: 8})
		s.Cost = 0.5
		s.TotalUsage = event.Usage{InputTokens: 70, OutputTokens: 80}
		s.TotalCost = 5
		s.DurationMS = 99
		s.Title = "renamed"
		s.Metadata = map[string]any{"error": "boom"}
		// Immutable fields are restored.
		s.ID, s.ParentID, s.Depth = "ses_other", "", 7
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.GetSession(ctx, "ses_kid")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "ses_kid" || got.ParentID != "ses_root" || got.Depth != 1 {
		t.Errorf("immutable fields changed: %+v", got)
	}
	if got.Status != session.StatusCompleted || got.StopReason != event.StopCompleted || got.Title != "renamed" ||
		got.Usage != (event.Usage{InputTokens: 7, OutputTokens: 8}) || got.Cost != 0.5 ||
		got.TotalUsage != (event.Usage{InputTokens: 70, OutputTokens: 80}) || got.TotalCost != 5 || got.DurationMS != 99 ||
		got.Metadata["error"] != "boom" {
		t.Errorf("update not applied: %+v", got)
	}
	if !got.CreatedAt.Equal(base.Add(time.Millisecond)) {
		t.Errorf("CreatedAt changed to %v", got.CreatedAt)
	}
	if !got.UpdatedAt.After(got.CreatedAt) {
		t.Errorf("UpdatedAt %v not after CreatedAt %v", got.UpdatedAt, got.CreatedAt)
	}
	if _, err := st.GetSession(ctx, "ses_other"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("an update created ses_other: %v", err)
	}
	kids, err := st.ListSessions(ctx, session.ListOptions{ParentID: "ses_root"})
	if err != nil || len(kids) != 1 || kids[0].ID != "ses_kid" {
		t.Errorf("children after update = %v, %v", kids, err)
	}

	// Read-modify-write is atomic: concurrent increments are all kept.
	const n = 50
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if err := st.UpdateSession(ctx, "ses_root", func(s *session.Session) { s.Usage.InputTokens++ }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, _ = st.GetSession(ctx, "ses_root")
	if got.Usage.InputTokens != n {
		t.Errorf("after %d concurrent increments InputTokens = %d", n, got.Usage.InputTokens)
	}
}

func testMetadataIsolation(t *testing.T, st session.Store) {
	ctx := context.Background()
	nested := map[string]any{"inner": "a"}
	list := []any{"x"}
	meta := map[string]any{"k": "v", "nested": nested, "list": list}
	s := newSession("ses_m", "", 0, base)
	s.Metadata = meta
	mustCreate(t, st, s)
	want := `{"k":"v","list":["x"],"nested":{"inner":"a"}}`

	// The caller's map after CreateSession.
	meta["k"] = "changed"
	meta["added"] = true
	nested["inner"] = "changed"
	list[0] = "changed"
	got, _ := st.GetSession(ctx, s.ID)
	if g := jsonOf(t, got.Metadata); g != want {
		t.Fatalf("metadata after the caller changed its map = %s, want %s", g, want)
	}

	// A returned copy.
	got.Metadata["k"] = "changed"
	got.Metadata["nested"].(map[string]any)["inner"] = "changed"
	got.Metadata["list"].([]any)[0] = "changed"
	got2, _ := st.GetSession(ctx, s.ID)
	if g := jsonOf(t, got2.Metadata); g != want {
		t.Fatalf("metadata after a reader changed its copy = %s, want %s", g, want)
	}
	list2, _ := st.ListSessions(ctx, session.ListOptions{})
	list2[0].Metadata["nested"].(map[string]any)["inner"] = "changed"
	got3, _ := st.GetSession(ctx, s.ID)
	if g := jsonOf(t, got3.Metadata); g != want {
		t.Fatalf("metadata after a lister changed its copy = %s, want %s", g, want)
	}

	// A map kept by an update function.
	var kept map[string]any
	if err := st.UpdateSession(ctx, s.ID, func(s *session.Session) {
		s.Metadata["new"] = "yes"
		kept = s.Metadata
	}); err != nil {
		t.Fatal(err)
	}
	kept["new"] = "changed later"
	kept["nested"].(map[string]any)["inner"] = "changed later"
	got4, _ := st.GetSession(ctx, s.ID)
	want2 := `{"k":"v","list":["x"],"nested":{"inner":"a"},"new":"yes"}`
	if g := jsonOf(t, got4.Metadata); g != want2 {
		t.Fatalf("metadata after an update function's map changed = %s, want %s", g, want2)
	}
}

func testList(t *testing.T, st session.Store) {
	ctx := context.Background()
	// Three roots and children, created out of time order.
	mustCreate(t, st, newSession("ses_r2", "", 0, base.Add(2*time.Second)))
	mustCreate(t, st, newSession("ses_r1", "", 0, base.Add(1*time.Second)))
	mustCreate(t, st, newSession("ses_r3", "", 0, base.Add(3*time.Second)))
	mustCreate(t, st, newSession("ses_c1", "ses_r1", 1, base.Add(4*time.Second)))
	mustCreate(t, st, newSession("ses_c2", "ses_r1", 1, base.Add(5*time.Second)))
	mustCreate(t, st, newSession("ses_g1", "ses_c1", 2, base.Add(6*time.Second)))

	ids := func(ss []session.Session) []string {
		out := []string{}
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	check := func(name string, opts session.ListOptions, want ...string) {
		t.Helper()
		got, err := st.ListSessions(ctx, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want == nil {
			want = []string{}
		}
		if g := ids(got); !reflect.DeepEqual(g, want) {
			t.Errorf("%s = %v, want %v", name, g, want)
		}
	}
	check("all", session.ListOptions{}, "ses_g1", "ses_c2", "ses_c1", "ses_r3", "ses_r2", "ses_r1")
	check("roots", session.ListOptions{RootsOnly: true}, "ses_r3", "ses_r2", "ses_r1")
	check("roots limit", session.ListOptions{RootsOnly: true, Limit: 2}, "ses_r3", "ses_r2")
	check("children", session.ListOptions{ParentID: "ses_r1"}, "ses_c2", "ses_c1")
	check("grandchildren", session.ListOptions{ParentID: "ses_c1"}, "ses_g1")
	check("no children", session.ListOptions{ParentID: "ses_r3"})
	check("limit", session.ListOptions{Limit: 1}, "ses_g1")

	// Same creation time: the smaller (newer, descending) id first.
	mustCreate(t, st, newSession("ses_tb", "", 0, base.Add(10*time.Second)))
	mustCreate(t, st, newSession("ses_ta", "", 0, base.Add(10*time.Second)))
	check("tie", session.ListOptions{RootsOnly: true, Limit: 2}, "ses_ta", "ses_tb")
}

// testListThread: ListOptions.Thread finds the sessions whose metadata
// names the thread (a string value only), newest first, with the other
// filters; a thread set, changed or removed by an update and a deleted
// session are found as they now are.
func testListThread(t *testing.T, st session.Store) {
	ctx := context.Background()
	withThread := func(s session.Session, thread any) session.Session {
		s.Metadata = map[string]any{session.MetaThread: thread, "other": "x"}
		return s
	}
	mustCreate(t, st, withThread(newSession("ses_a1", "", 0, base.Add(1*time.Second)), "t1"))
	mustCreate(t, st, withThread(newSession("ses_b", "", 0, base.Add(2*time.Second)), "t2"))
	mustCreate(t, st, withThread(newSession("ses_a2", "", 0, base.Add(3*time.Second)), "t1"))
	mustCreate(t, st, withThread(newSession("ses_ka", "ses_a1", 1, base.Add(4*time.Second)), "t1"))
	mustCreate(t, st, withThread(newSession("ses_n", "", 0, base.Add(5*time.Second)), 5))
	mustCreate(t, st, newSession("ses_c", "", 0, base.Add(6*time.Second)))

	check := func(name string, opts session.ListOptions, want ...string) {
		t.Helper()
		got, err := st.ListSessions(ctx, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		g := []string{}
		for _, s := range got {
			g = append(g, s.ID)
		}
		if want == nil {
			want = []string{}
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("%s = %v, want %v", name, g, want)
		}
	}
	check("thread", session.ListOptions{Thread: "t1"}, "ses_ka", "ses_a2", "ses_a1")
	check("thread roots", session.ListOptions{Thread: "t1", RootsOnly: true}, "ses_a2", "ses_a1")
	check("thread roots limit", session.ListOptions{Thread: "t1", RootsOnly: true, Limit: 1}, "ses_a2")
	check("thread children", session.ListOptions{Thread: "t1", ParentID: "ses_a1"}, "ses_ka")
	check("other thread", session.ListOptions{Thread: "t2"}, "ses_b")
	check("unknown thread", session.ListOptions{Thread: "t3"})
	check("not a string", session.ListOptions{Thread: "5"})
	check("another key's value", session.ListOptions{Thread: "x"})

	update := func(id string, fn func(*session.Session)) {
		t.Helper()
		if err := st.UpdateSession(ctx, id, fn); err != nil {
			t.Fatalf("UpdateSession(%s): %v", id, err)
		}
	}
	update("ses_c", func(s *session.Session) { s.Metadata = map[string]any{session.MetaThread: "t3"} })
	update("ses_a2", func(s *session.Session) { s.Metadata[session.MetaThread] = "t2" })
	update("ses_b", func(s *session.Session) { s.Metadata = nil })
	update("ses_n", func(s *session.Session) { s.Title = "retitled" })
	check("set by an update", session.ListOptions{Thread: "t3"}, "ses_c")
	check("changed by an update", session.ListOptions{Thread: "t2"}, "ses_a2")
	check("left by an update", session.ListOptions{Thread: "t1", RootsOnly: true}, "ses_a1")
	if err := st.DeleteSession(ctx, "ses_a1"); err != nil {
		t.Fatal(err)
	}
	check("deleted", session.ListOptions{Thread: "t1"})
}

func testDeleteSubtree(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_root", "", 0, base))
	mustCreate(t, st, newSession("ses_a", "ses_root", 1, base.Add(1)))
	mustCreate(t, st, newSession("ses_b", "ses_root", 1, base.Add(2)))
	mustCreate(t, st, newSession("ses_a1", "ses_a", 2, base.Add(3)))
	mustCreate(t, st, newSession("ses_a11", "ses_a1", 3, base.Add(4)))
	for _, id := range []string{"ses_root", "ses_a", "ses_b", "ses_a1", "ses_a11"} {
		if err := st.AppendEvents(ctx, id, event.RunStarted{SessionID: id, RunID: "run_1", AgentName: "x"}); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendMessages(ctx, id, session.Message{ID: "msg_" + id, Message: model.UserText("hi " + id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteSession(ctx, "ses_a"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"ses_a", "ses_a1", "ses_a11"} {
		if _, err := st.GetSession(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("GetSession(%s) after deleting its subtree = %v", id, err)
		}
		if _, err := st.Events(ctx, id, 0); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Events(%s) after deleting its subtree = %v", id, err)
		}
		if _, err := st.Messages(ctx, id); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Messages(%s) after deleting its subtree = %v", id, err)
		}
		if err := st.AppendEvents(ctx, id, event.PartEnd{}); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("AppendEvents(%s) after deleting its subtree = %v", id, err)
		}
	}
	for _, id := range []string{"ses_root", "ses_b"} {
		if _, err := st.GetSession(ctx, id); err != nil {
			t.Errorf("GetSession(%s) = %v", id, err)
		}
		recs, err := st.Events(ctx, id, 0)
		if err != nil || len(recs) != 1 {
			t.Errorf("Events(%s) = %d records, %v", id, len(recs), err)
		}
		msgs, err := st.Messages(ctx, id)
		if err != nil || len(msgs) != 1 {
			t.Errorf("Messages(%s) = %d, %v", id, len(msgs), err)
		}
	}
	kids, err := st.ListSessions(ctx, session.ListOptions{ParentID: "ses_root"})
	if err != nil || len(kids) != 1 || kids[0].ID != "ses_b" {
		t.Errorf("children of root after delete = %v, %v", kids, err)
	}
	all, _ := st.ListSessions(ctx, session.ListOptions{})
	if len(all) != 2 {
		t.Errorf("%d sessions left, want 2", len(all))
	}
	if err := st.DeleteSession(ctx, "ses_a"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("second delete = %v, want ErrNotFound", err)
	}
	// An id can be used again after its session was deleted.
	mustCreate(t, st, newSession("ses_a", "ses_root", 1, base.Add(9)))
	recs, err := st.Events(ctx, "ses_a", 0)
	if err != nil || len(recs) != 0 {
		t.Errorf("recreated session has %d events, %v", len(recs), err)
	}
	if err := st.AppendEvents(ctx, "ses_a", event.PartEnd{Index: 3}); err != nil {
		t.Fatal(err)
	}
	recs, _ = st.Events(ctx, "ses_a", 0)
	if len(recs) != 1 || recs[0].Seq != 1 {
		t.Errorf("recreated session's log = %+v, want one record with seq 1", recs)
	}
	// Deleting the root takes everything.
	if err := st.DeleteSession(ctx, "ses_root"); err != nil {
		t.Fatal(err)
	}
	all, _ = st.ListSessions(ctx, session.ListOptions{})
	if len(all) != 0 {
		t.Errorf("%d sessions left after deleting the root", len(all))
	}
}

func testSubtree(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_r", "", 0, base))
	mustCreate(t, st, newSession("ses_a", "ses_r", 1, base.Add(1)))
	mustCreate(t, st, newSession("ses_b", "ses_r", 1, base.Add(2)))
	mustCreate(t, st, newSession("ses_a1", "ses_a", 2, base.Add(3)))
	mustCreate(t, st, newSession("ses_x", "", 0, base.Add(4)))
	got, err := session.Subtree(ctx, st, "ses_r")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if want := []string{"ses_r", "ses_a", "ses_b", "ses_a1"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("Subtree = %v, want %v", ids, want)
	}
	if _, err := session.Subtree(ctx, st, "ses_none"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Subtree of an unknown session = %v", err)
	}
}

// A session cannot be its own parent: the parent does not exist yet, and a
// store whose foreign key finds the new row itself would keep a cycle.
func testSessionOwnParent(t *testing.T, st session.Store) {
	ctx := context.Background()
	if err := st.CreateSession(ctx, newSession("ses_1", "ses_1", 1, base)); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("CreateSession of its own child = %v, want ErrNotFound", err)
	}
	if _, err := st.GetSession(ctx, "ses_1"); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("a refused session is stored: %v", err)
	}
}
