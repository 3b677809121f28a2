package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// Run runs the conformance suite. open must return a new, empty store; the
// suite closes it at the end of each subtest.
func Run(t *testing.T, open func(t *testing.T) session.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st session.Store)
	}{
		{"CreateGet", testCreateGet},
		{"CreateExists", testCreateExists},
		{"CreateMissingParent", testCreateMissingParent},
		{"NotFound", testNotFound},
		{"Update", testUpdate},
		{"MetadataCopyIsolation", testMetadataIsolation},
		{"List", testList},
		{"DeleteSubtree", testDeleteSubtree},
		{"Messages", testMessages},
		{"MessageCopyIsolation", testMessageIsolation},
		{"EventsRoundTrip", testEventsRoundTrip},
		{"EventsOrdering", testEventsOrdering},
		{"ReadYourWrites", testReadYourWrites},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Subtree", testSubtree},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			defer func() {
				if err := st.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			tc.fn(t, st)
		})
	}
}

var base = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

// newSession builds a session record; created orders sessions in time.
func newSession(id, parent string, depth int, created time.Time) session.Session {
	return session.Session{
		ID: id, ParentID: parent, Depth: depth, AgentName: "agent-" + id, SourceType: event.SourceAgent,
		Title: "title of " + id, Status: session.StatusRunning, CreatedAt: created, UpdatedAt: created,
	}
}

func mustCreate(t *testing.T, st session.Store, s session.Session) {
	t.Helper()
	if err := st.CreateSession(context.Background(), s); err != nil {
		t.Fatalf("CreateSession(%s): %v", s.ID, err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sameSession(t *testing.T, got, want session.Session) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("%s: CreatedAt = %v, want %v", want.ID, got.CreatedAt, want.CreatedAt)
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("%s: UpdatedAt = %v, want %v", want.ID, got.UpdatedAt, want.UpdatedAt)
	}
	got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	// Metadata is compared through JSON: a store may give numbers back as
	// float64.
	if g, w := jsonOf(t, got.Metadata), jsonOf(t, want.Metadata); g != w {
		t.Errorf("%s: Metadata = %s, want %s", want.ID, g, w)
	}
	got.Metadata, want.Metadata = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("session differs:\n got %+v\nwant %+v", got, want)
	}
}

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

func sampleMessages(sid string) []session.Message {
	t0 := base.Add(time.Minute)
	return []session.Message{
		{ID: "msg_1", SessionID: sid, AgentName: "a", CreatedAt: t0, Message: model.UserText("hello")},
		{ID: "msg_2", SessionID: sid, AgentName: "a", CreatedAt: t0.Add(time.Second), Message: model.Message{
			Role: model.RoleAssistant,
			Parts: []model.Part{
				{Kind: model.PartThinking, Text: "let me think"},
				{Kind: model.PartText, Text: "I will call a tool"},
				{Kind: model.PartToolCall, ToolCallID: "cal_1", ToolName: "task", Args: json.RawMessage(`{"agent_or_team":"x","prompt":"p"}`)},
			},
		}},
		{ID: "msg_3", SessionID: sid, AgentName: "a", CreatedAt: t0.Add(2 * time.Second), Message: model.Message{
			Role:  model.RoleTool,
			Parts: []model.Part{{Kind: model.PartToolResult, ToolCallID: "cal_1", ToolName: "task", Text: "failed", IsError: true}},
		}},
		{ID: "msg_4", SessionID: sid, AgentName: "a", CreatedAt: t0.Add(3 * time.Second), Message: model.Message{
			Role: model.RoleUser, Synthetic: true, Parts: []model.Part{{Kind: model.PartText, Text: "injected"}},
		}},
		{ID: "msg_5", SessionID: sid, CreatedAt: t0.Add(4 * time.Second), Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{}}},
	}
}

func sameMessages(t *testing.T, got, want []session.Message) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("message %d: CreatedAt %v, want %v", i, g.CreatedAt, w.CreatedAt)
		}
		g.CreatedAt, w.CreatedAt = time.Time{}, time.Time{}
		if gj, wj := jsonOf(t, g), jsonOf(t, w); gj != wj {
			t.Errorf("message %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
}

func testMessages(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	mustCreate(t, st, newSession("ses_2", "", 0, base))
	msgs := sampleMessages("ses_1")
	if err := st.AppendMessages(ctx, "ses_1", msgs[:2]...); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, "ses_2", session.Message{ID: "msg_x", Message: model.UserText("other")}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, "ses_1", msgs[2]); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, "ses_1", msgs[3:]...); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessages(ctx, "ses_1"); err != nil {
		t.Fatalf("appending no messages: %v", err)
	}
	got, err := st.Messages(ctx, "ses_1")
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, got, msgs)
	// SessionID is the session appended to.
	other, err := st.Messages(ctx, "ses_2")
	if err != nil || len(other) != 1 || other[0].SessionID != "ses_2" || other[0].Text() != "other" {
		t.Errorf("Messages(ses_2) = %+v, %v", other, err)
	}
	empty, err := st.Messages(ctx, "ses_2x")
	if !errors.Is(err, session.ErrNotFound) || len(empty) != 0 {
		t.Errorf("Messages of an unknown session = %v, %v", empty, err)
	}
	mustCreate(t, st, newSession("ses_3", "", 0, base))
	none, err := st.Messages(ctx, "ses_3")
	if err != nil || len(none) != 0 {
		t.Errorf("Messages of a new session = %v, %v", none, err)
	}
}

func testMessageIsolation(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	msgs := sampleMessages("ses_1")
	want := jsonOf(t, msgs[1])
	if err := st.AppendMessages(ctx, "ses_1", msgs[1]); err != nil {
		t.Fatal(err)
	}
	msgs[1].Parts[1].Text = "changed"
	msgs[1].Parts[2].Args[2] = 'X'
	got, _ := st.Messages(ctx, "ses_1")
	got[0].CreatedAt = sampleMessages("ses_1")[1].CreatedAt
	if g := jsonOf(t, got[0]); g != want {
		t.Fatalf("stored message changed with the caller's:\n got %s\nwant %s", g, want)
	}
	got[0].Parts[1].Text = "changed"
	got[0].Parts[2].Args[2] = 'X'
	again, _ := st.Messages(ctx, "ses_1")
	again[0].CreatedAt = got[0].CreatedAt
	if g := jsonOf(t, again[0]); g != want {
		t.Fatalf("stored message changed with a reader's copy:\n got %s\nwant %s", g, want)
	}
}

// sampleEvents has one event of every kind.
func sampleEvents() []event.Event {
	return []event.Event{
		event.RunStarted{SessionID: "ses_1", RunID: "run_1", AgentName: "a", ParentSessionID: "ses_0"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}},
		event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "héllo \"wörld\"\n"}},
		event.PartEnd{Index: 0},
		event.PartStart{Index: 1, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_1", ToolName: "task"}},
		event.PartDelta{Index: 1, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: `{"a":`, ToolCallID: "cal_1"}},
		event.ToolCallStart{ToolCallID: "cal_1", ToolName: "task", Title: "task", ToolKind: "other", RawInput: json.RawMessage(`{"a":1}`)},
		event.ToolCallProgress{ToolCallID: "cal_1", Status: event.StatusInProgress, Items: []event.ProgressItem{{Type: "text", Content: "half"}}},
		event.SpawnSessionStart{ChildSessionID: "ses_2", ParentSessionID: "ses_1", ToolCallID: "cal_1", SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: "b", SourceType: event.SourceAgent, Depth: 1, Description: "d",
			Metadata: map[string]any{"prompt": "p", "max_depth": 5.0}, ModelID: "test"},
		event.Subagent{SourceName: "b", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: "ses_2", ParentSessionID: "ses_1",
			ToolCallID: "cal_1", Path: []string{"ses_2"}, Event: event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartThinking, ContentDelta: "hm"}}},
		event.SpawnSessionEnd{ChildSessionID: "ses_2", ParentSessionID: "ses_1", ToolCallID: "cal_1", SourceName: "b", SourceType: event.SourceAgent,
			Depth: 1, StopReason: event.StopError, Error: "boom", Usage: &event.Usage{InputTokens: 1, OutputTokens: 2}, Cost: 0.25, DurationMS: 10},
		event.ToolCallComplete{ToolCallID: "cal_1", ToolName: "task", ToolInput: json.RawMessage(`{"a":1}`), ToolResult: "r", IsError: true, AgentName: "a"},
		event.PlanUpdate{Entries: []event.PlanEntry{{Content: "c", Priority: "high", Status: "pending"}}},
		event.Custom{EventType: "hook", EventData: map[string]any{"x": "y"}, Source: "s"},
		event.RunError{Message: "m", Code: "c", RunID: "run_1", AgentName: "a"},
		event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done", Usage: event.Usage{InputTokens: 3}, Cost: 0.5, Model: "test", FinishReason: "stop"}},
	}
}

func marshal(t *testing.T, e event.Event) string {
	t.Helper()
	b, err := event.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testEventsRoundTrip(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	evs := sampleEvents()
	before := time.Now().Add(-time.Second)
	if err := st.AppendEvents(ctx, "ses_1", evs[:3]...); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs[3:] {
		if err := st.AppendEvents(ctx, "ses_1", e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AppendEvents(ctx, "ses_1"); err != nil {
		t.Fatalf("appending no events: %v", err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recs, err := st.Events(ctx, "ses_1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(evs) {
		t.Fatalf("%d records, want %d", len(recs), len(evs))
	}
	for i, r := range recs {
		if r.SessionID != "ses_1" || r.Seq != int64(i+1) {
			t.Errorf("record %d: session %q seq %d", i, r.SessionID, r.Seq)
		}
		if i > 0 && r.GlobalSeq <= recs[i-1].GlobalSeq {
			t.Errorf("record %d: global seq %d after %d", i, r.GlobalSeq, recs[i-1].GlobalSeq)
		}
		if r.Time.Before(before) || r.Time.After(time.Now().Add(time.Second)) {
			t.Errorf("record %d: time %v", i, r.Time)
		}
		if g, w := marshal(t, r.Event), marshal(t, evs[i]); g != w {
			t.Errorf("record %d:\n got %s\nwant %s", i, g, w)
		}
	}
	tail, err := st.Events(ctx, "ses_1", 13)
	if err != nil || len(tail) != 3 || tail[0].Seq != 14 {
		t.Errorf("Events after 13 = %d records (first %+v), %v", len(tail), tail, err)
	}
	none, err := st.Events(ctx, "ses_1", int64(len(evs)))
	if err != nil || len(none) != 0 {
		t.Errorf("Events after the last = %v, %v", none, err)
	}
	all, err := st.Events(ctx, "ses_1", -5)
	if err != nil || len(all) != len(evs) {
		t.Errorf("Events after -5 = %d, %v", len(all), err)
	}
	if err := st.AppendEvents(ctx, "ses_1", nil); err == nil {
		t.Error("appending a nil event succeeded")
	}
	if err := st.AppendEvents(ctx, "ses_1", event.Subagent{Path: []string{"x"}}); err == nil {
		t.Error("appending a subagent event that wraps nothing succeeded")
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatalf("Flush after rejected appends: %v", err)
	}
	recs, _ = st.Events(ctx, "ses_1", 0)
	if len(recs) != len(evs) {
		t.Errorf("rejected appends stored something: %d records", len(recs))
	}
}

func testEventsOrdering(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_a", "", 0, base))
	mustCreate(t, st, newSession("ses_b", "ses_a", 1, base))
	// Interleave appends to two sessions; the store-wide order is the
	// append order.
	type app struct {
		sid string
		idx int
	}
	var order []app
	for i := range 100 {
		sid := "ses_a"
		if i%3 == 1 {
			sid = "ses_b"
		}
		if err := st.AppendEvents(ctx, sid, event.PartEnd{Index: i}); err != nil {
			t.Fatal(err)
		}
		order = append(order, app{sid, i})
	}
	var merged []session.Record
	for _, sid := range []string{"ses_a", "ses_b"} {
		recs, err := st.Events(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			if r.Seq != int64(i+1) {
				t.Fatalf("%s record %d has seq %d", sid, i, r.Seq)
			}
		}
		merged = append(merged, recs...)
	}
	if len(merged) != len(order) {
		t.Fatalf("%d records, want %d", len(merged), len(order))
	}
	byGlobal := map[int64]session.Record{}
	for _, r := range merged {
		if _, dup := byGlobal[r.GlobalSeq]; dup {
			t.Fatalf("global seq %d used twice", r.GlobalSeq)
		}
		byGlobal[r.GlobalSeq] = r
	}
	sortRecords(merged)
	for i, r := range merged {
		if r.SessionID != order[i].sid || r.Event.(event.PartEnd).Index != order[i].idx {
			t.Fatalf("position %d in global order: %s %d, want %s %d", i, r.SessionID, r.Event.(event.PartEnd).Index, order[i].sid, order[i].idx)
		}
	}
}

func sortRecords(rs []session.Record) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].GlobalSeq < rs[j-1].GlobalSeq; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

func testReadYourWrites(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	for i := range 20 {
		if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{Index: i}); err != nil {
			t.Fatal(err)
		}
		recs, err := st.Events(ctx, "ses_1", int64(i))
		if err != nil || len(recs) != 1 || recs[0].Seq != int64(i+1) {
			t.Fatalf("Events right after append %d = %+v, %v", i, recs, err)
		}
		if err := st.AppendMessages(ctx, "ses_1", session.Message{ID: fmt.Sprintf("msg_%d", i), Message: model.UserText("m")}); err != nil {
			t.Fatal(err)
		}
		msgs, err := st.Messages(ctx, "ses_1")
		if err != nil || len(msgs) != i+1 {
			t.Fatalf("Messages right after append %d = %d, %v", i, len(msgs), err)
		}
	}
	// A child created right after its parent's events is visible at once.
	mustCreate(t, st, newSession("ses_2", "ses_1", 1, base))
	if _, err := st.GetSession(ctx, "ses_2"); err != nil {
		t.Fatal(err)
	}
}

func testConcurrentWriters(t *testing.T, st session.Store) {
	ctx := context.Background()
	const (
		writers = 8
		perW    = 200
	)
	mustCreate(t, st, newSession("ses_shared", "", 0, base))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		sid := fmt.Sprintf("ses_w%d", w)
		wg.Go(func() {
			<-start
			// Each writer creates its own session concurrently with the others.
			if err := st.CreateSession(ctx, newSession(sid, "ses_shared", 1, base.Add(time.Duration(w)))); err != nil {
				t.Error(err)
				return
			}
			for i := 0; i < perW; {
				n := 1 + (i+w)%4 // batches of 1..4 events
				if i+n > perW {
					n = perW - i
				}
				own := make([]event.Event, n)
				shared := make([]event.Event, n)
				for k := range n {
					own[k] = event.PartDelta{Index: i + k, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: sid}}
					shared[k] = event.Custom{EventType: sid, EventData: map[string]any{"i": float64(i + k)}}
				}
				if err := st.AppendEvents(ctx, sid, own...); err != nil {
					t.Error(err)
					return
				}
				if err := st.AppendEvents(ctx, "ses_shared", shared...); err != nil {
					t.Error(err)
					return
				}
				i += n
				if i%50 < n {
					if err := st.AppendMessages(ctx, sid, session.Message{ID: fmt.Sprintf("msg_%s_%d", sid, i), Message: model.UserText(sid)}); err != nil {
						t.Error(err)
						return
					}
					if err := st.UpdateSession(ctx, sid, func(s *session.Session) { s.Usage.OutputTokens++ }); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	// Readers run alongside the writers.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r == 0 {
					if _, err := st.Events(ctx, "ses_shared", 0); err != nil {
						t.Error(err)
						return
					}
				} else {
					if _, err := st.ListSessions(ctx, session.ListOptions{ParentID: "ses_shared"}); err != nil {
						t.Error(err)
						return
					}
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	close(start)
	wg.Wait()
	close(stop)
	readers.Wait()
	if t.Failed() {
		return
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for w := range writers {
		sid := fmt.Sprintf("ses_w%d", w)
		recs, err := st.Events(ctx, sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != perW {
			t.Fatalf("%s: %d events, want %d", sid, len(recs), perW)
		}
		for i, r := range recs {
			if r.Seq != int64(i+1) || r.Event.(event.PartDelta).Index != i {
				t.Fatalf("%s record %d: seq %d index %d", sid, i, r.Seq, r.Event.(event.PartDelta).Index)
			}
			if seen[r.GlobalSeq] {
				t.Fatalf("global seq %d used twice", r.GlobalSeq)
			}
			seen[r.GlobalSeq] = true
		}
		msgs, err := st.Messages(ctx, sid)
		if err != nil || len(msgs) != perW/50 {
			t.Errorf("%s: %d messages, %v; want %d", sid, len(msgs), err, perW/50)
		}
		s, err := st.GetSession(ctx, sid)
		if err != nil || s.Usage.OutputTokens != perW/50 {
			t.Errorf("%s: %d updates kept, %v; want %d", sid, s.Usage.OutputTokens, err, perW/50)
		}
	}
	recs, err := st.Events(ctx, "ses_shared", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != writers*perW {
		t.Fatalf("shared log has %d events, want %d", len(recs), writers*perW)
	}
	next := map[string]float64{}
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("shared record %d has seq %d", i, r.Seq)
		}
		if i > 0 && r.GlobalSeq <= recs[i-1].GlobalSeq {
			t.Fatalf("shared record %d: global seq not increasing", i)
		}
		if seen[r.GlobalSeq] {
			t.Fatalf("global seq %d used twice", r.GlobalSeq)
		}
		seen[r.GlobalSeq] = true
		c := r.Event.(event.Custom)
		if c.EventData["i"] != next[c.EventType] {
			t.Fatalf("shared log: %s event %v where %v was next", c.EventType, c.EventData["i"], next[c.EventType])
		}
		next[c.EventType]++
	}
	kids, _ := st.ListSessions(ctx, session.ListOptions{ParentID: "ses_shared"})
	if len(kids) != writers {
		t.Errorf("%d children, want %d", len(kids), writers)
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

func testClosed(t *testing.T, st session.Store) {
	ctx := context.Background()
	mustCreate(t, st, newSession("ses_1", "", 0, base))
	if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	checks := map[string]error{}
	checks["CreateSession"] = st.CreateSession(ctx, newSession("ses_2", "", 0, base))
	_, checks["GetSession"] = st.GetSession(ctx, "ses_1")
	checks["UpdateSession"] = st.UpdateSession(ctx, "ses_1", func(*session.Session) {})
	_, checks["ListSessions"] = st.ListSessions(ctx, session.ListOptions{})
	checks["DeleteSession"] = st.DeleteSession(ctx, "ses_1")
	checks["AppendMessages"] = st.AppendMessages(ctx, "ses_1", session.Message{Message: model.UserText("x")})
	_, checks["Messages"] = st.Messages(ctx, "ses_1")
	checks["AppendEvents"] = st.AppendEvents(ctx, "ses_1", event.PartEnd{})
	_, checks["Events"] = st.Events(ctx, "ses_1", 0)
	checks["Flush"] = st.Flush(ctx)
	for name, err := range checks {
		if !errors.Is(err, session.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	// Close is idempotent (Run closes again).
}
