package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/sqlite"
)

// TestSQLiteWriterModel applies random sequences of writes (creates,
// updates, events, messages, claims, releases, flushes, a close and a
// reopen, concurrent appenders), each with commits deferred or not, both to
// a SQLite store and to a model made of maps, and after every step
// compares what the store answers (GetSession, Events, Messages,
// ListSessions) with the model. The writer's batching, its deferred
// commits and its reopen path all sit between the two.
//
// It finds a writer bug: with apply's per-transaction cache of each log's
// last seq left unwritten (a second append in one transaction reads the
// committed maximum again), it failed after 10 cases, shrunk to two
// appends to one session of which the second was lost.
func TestSQLiteWriterModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := newWriterModel(rt, t.TempDir())
		defer m.close()
		rt.Repeat(map[string]func(*rapid.T){
			"create":     m.create,
			"update":     m.update,
			"events":     m.appendEvents,
			"messages":   m.appendMessages,
			"claim":      m.claim,
			"release":    m.release,
			"flush":      m.flush,
			"reopen":     m.reopen,
			"concurrent": m.concurrent,
			"":           m.check,
		})
	})
}

// modelSession is what the model keeps of a session.
type modelSession struct {
	parent  string
	depth   int
	title   string
	cost    float64
	created time.Time
}

type writerModel struct {
	path     string
	opts     sqlite.Options
	st       *sqlite.Store
	sessions map[string]*modelSession
	events   map[string][]int    // PartEnd indexes in order
	messages map[string][]string // message texts in order
	held     map[string]bool     // claims this store holds
	clock    int                 // orders creations
	next     int                 // the next event index
}

var modelIDs = []string{"ses_a", "ses_b", "ses_c", "ses_d", "ses_e", "ses_f"}

var modelBase = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newWriterModel(rt *rapid.T, dir string) *writerModel {
	opts := sqlite.Options{
		BatchSize:  rapid.SampledFrom([]int{0, 1, 3}).Draw(rt, "batch"),
		MaxPending: rapid.SampledFrom([]int{0, 2, 5}).Draw(rt, "pending"),
		// An hour's linger: only Flush, Release and Close commit.
		Linger: rapid.SampledFrom([]time.Duration{-1, 0, time.Hour}).Draw(rt, "linger"),
	}
	m := &writerModel{
		path:     filepath.Join(dir, fmt.Sprintf("model-%d.db", time.Now().UnixNano())),
		opts:     opts,
		sessions: map[string]*modelSession{},
		events:   map[string][]int{},
		messages: map[string][]string{},
		held:     map[string]bool{},
	}
	m.open(rt)
	return m
}

func (m *writerModel) open(rt *rapid.T) {
	st, err := sqlite.Open(m.path, m.opts)
	if err != nil {
		rt.Fatalf("Open: %v", err)
	}
	m.st = st
}

func (m *writerModel) close() {
	if m.st != nil {
		m.st.Close()
	}
}

// ctx draws whether the write's commit is deferred (session.DeferCommits).
func (m *writerModel) ctx(rt *rapid.T) context.Context {
	if rapid.Bool().Draw(rt, "deferred") {
		return session.DeferCommits(context.Background())
	}
	return context.Background()
}

func drawID(rt *rapid.T, label string) string {
	return rapid.SampledFrom(modelIDs).Draw(rt, label)
}

// wantErr checks err against the model's expectation: nil when want is
// nil, else errors.Is(err, want).
func wantErr(rt *rapid.T, op string, err, want error) {
	if want == nil && err != nil {
		rt.Fatalf("%s: %v, want success", op, err)
	}
	if want != nil && !errors.Is(err, want) {
		rt.Fatalf("%s: %v, want %v", op, err, want)
	}
}

func (m *writerModel) create(rt *rapid.T) {
	id := drawID(rt, "id")
	parent := ""
	if rapid.Bool().Draw(rt, "child") {
		parent = drawID(rt, "parent")
	}
	depth := 0
	var want error
	switch p, ok := m.sessions[parent]; {
	case parent == id:
		// Refused before the id is looked up: its own parent.
		want = session.ErrNotFound
	case m.sessions[id] != nil:
		want = session.ErrExists
	case parent != "" && !ok:
		want = session.ErrNotFound
	case parent != "":
		depth = p.depth + 1
	}
	m.clock++
	created := modelBase.Add(time.Duration(m.clock) * time.Second)
	s := session.Session{
		ID: id, ParentID: parent, Depth: depth, AgentName: "agent", Title: "new " + id,
		Status: session.StatusRunning, CreatedAt: created, UpdatedAt: created,
	}
	err := m.st.CreateSession(m.ctx(rt), s)
	wantErr(rt, "CreateSession "+id+" under "+parent, err, want)
	if want == nil {
		m.sessions[id] = &modelSession{parent: parent, depth: depth, title: s.Title, created: created}
	}
}

func (m *writerModel) update(rt *rapid.T) {
	id := drawID(rt, "id")
	title := rapid.StringMatching(`[a-z]{0,6}`).Draw(rt, "title")
	err := m.st.UpdateSession(m.ctx(rt), id, func(s *session.Session) {
		s.Title = title
		s.Cost++
	})
	ms := m.sessions[id]
	if ms == nil {
		wantErr(rt, "UpdateSession "+id, err, session.ErrNotFound)
		return
	}
	wantErr(rt, "UpdateSession "+id, err, nil)
	ms.title = title
	ms.cost++
}

func (m *writerModel) appendEvents(rt *rapid.T) {
	id := drawID(rt, "id")
	n := rapid.IntRange(0, 4).Draw(rt, "n")
	var evs []event.Event
	var idx []int
	for range n {
		evs = append(evs, event.PartEnd{Index: m.next})
		idx = append(idx, m.next)
		m.next++
	}
	err := m.st.AppendEvents(m.ctx(rt), id, evs...)
	if m.sessions[id] == nil {
		if n > 0 {
			wantErr(rt, "AppendEvents "+id, err, session.ErrNotFound)
		}
		return
	}
	wantErr(rt, "AppendEvents "+id, err, nil)
	m.events[id] = append(m.events[id], idx...)
}

func (m *writerModel) appendMessages(rt *rapid.T) {
	id := drawID(rt, "id")
	n := rapid.IntRange(0, 3).Draw(rt, "n")
	var msgs []session.Message
	var texts []string
	for i := range n {
		text := fmt.Sprintf("msg %d.%d", m.clock, i)
		m.clock++
		msgs = append(msgs, session.Message{Message: model.UserText(text)})
		texts = append(texts, text)
	}
	err := m.st.AppendMessages(m.ctx(rt), id, msgs...)
	if m.sessions[id] == nil {
		if n > 0 {
			wantErr(rt, "AppendMessages "+id, err, session.ErrNotFound)
		}
		return
	}
	wantErr(rt, "AppendMessages "+id, err, nil)
	m.messages[id] = append(m.messages[id], texts...)
}

// inLine reports whether a and b are on one line of the tree: the same
// session, or one an ancestor of the other.
func (m *writerModel) inLine(a, b string) bool {
	return m.isAncestor(a, b) || m.isAncestor(b, a)
}

// isAncestor reports whether a is b or one of b's ancestors.
func (m *writerModel) isAncestor(a, b string) bool {
	for cur := b; cur != ""; {
		if cur == a {
			return true
		}
		s := m.sessions[cur]
		if s == nil {
			return false
		}
		cur = s.parent
	}
	return false
}

func (m *writerModel) claim(rt *rapid.T) {
	id := drawID(rt, "id")
	var want error
	for h := range m.held {
		if m.inLine(h, id) {
			want = session.ErrRunning
		}
	}
	err := m.st.Claim(m.ctx(rt), id)
	wantErr(rt, "Claim "+id, err, want)
	if want == nil {
		m.held[id] = true
	}
}

func (m *writerModel) release(rt *rapid.T) {
	id := drawID(rt, "id")
	wantErr(rt, "Release "+id, m.st.Release(m.ctx(rt), id), nil)
	delete(m.held, id)
}

func (m *writerModel) flush(rt *rapid.T) {
	wantErr(rt, "Flush", m.st.Flush(context.Background()), nil)
}

// reopen closes the store and opens the file again: every write answered
// before Close is there, deferred or not; the claims ended with the store.
func (m *writerModel) reopen(rt *rapid.T) {
	wantErr(rt, "Close", m.st.Close(), nil)
	m.st = nil
	m.open(rt)
	clear(m.held)
}

// concurrent appends events from two goroutines to two sessions at once;
// each session's log keeps its caller's order.
func (m *writerModel) concurrent(rt *rapid.T) {
	a, b := drawID(rt, "a"), drawID(rt, "b")
	if a == b || m.sessions[a] == nil || m.sessions[b] == nil {
		return
	}
	n := rapid.IntRange(1, 20).Draw(rt, "n")
	deferred := rapid.Bool().Draw(rt, "deferred")
	ctx := context.Background()
	if deferred {
		ctx = session.DeferCommits(ctx)
	}
	start := m.next
	m.next += 2 * n
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for w, id := range []string{a, b} {
		wg.Go(func() {
			for i := range n {
				if err := m.st.AppendEvents(ctx, id, event.PartEnd{Index: start + w*n + i}); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for w, id := range []string{a, b} {
		wantErr(rt, "concurrent AppendEvents "+id, errs[w], nil)
		for i := range n {
			m.events[id] = append(m.events[id], start+w*n+i)
		}
	}
}

// check compares every observable of the store with the model.
func (m *writerModel) check(rt *rapid.T) {
	ctx := context.Background()
	for _, id := range modelIDs {
		ms := m.sessions[id]
		got, err := m.st.GetSession(ctx, id)
		if ms == nil {
			wantErr(rt, "GetSession "+id, err, session.ErrNotFound)
			continue
		}
		wantErr(rt, "GetSession "+id, err, nil)
		if got.ParentID != ms.parent || got.Depth != ms.depth || got.Title != ms.title || got.Cost != ms.cost || !got.CreatedAt.Equal(ms.created) {
			rt.Fatalf("GetSession %s = parent %q depth %d title %q cost %v created %v; model has %+v",
				id, got.ParentID, got.Depth, got.Title, got.Cost, got.CreatedAt, *ms)
		}
		recs, err := m.st.Events(ctx, id, 0)
		wantErr(rt, "Events "+id, err, nil)
		var idx []int
		for i, r := range recs {
			if r.Seq != int64(i+1) || r.SessionID != id {
				rt.Fatalf("Events %s record %d: seq %d session %s", id, i, r.Seq, r.SessionID)
			}
			idx = append(idx, r.Event.(event.PartEnd).Index)
		}
		if !slices.Equal(idx, m.events[id]) {
			rt.Fatalf("Events %s = %v, model has %v", id, idx, m.events[id])
		}
		msgs, err := m.st.Messages(ctx, id)
		wantErr(rt, "Messages "+id, err, nil)
		var texts []string
		for _, msg := range msgs {
			texts = append(texts, msg.Text())
		}
		if !slices.Equal(texts, m.messages[id]) {
			rt.Fatalf("Messages %s = %q, model has %q", id, texts, m.messages[id])
		}
	}
	m.checkList(rt, session.ListOptions{})
	m.checkList(rt, session.ListOptions{RootsOnly: true})
}

// checkList compares a listing's ids with the model's, newest first.
func (m *writerModel) checkList(rt *rapid.T, opts session.ListOptions) {
	list, err := m.st.ListSessions(context.Background(), opts)
	wantErr(rt, "ListSessions", err, nil)
	var got, want []string
	for _, s := range list {
		got = append(got, s.ID)
	}
	for id, ms := range m.sessions {
		if !opts.RootsOnly || ms.parent == "" {
			want = append(want, id)
		}
	}
	slices.SortFunc(want, func(a, b string) int { return m.sessions[b].created.Compare(m.sessions[a].created) })
	if !slices.Equal(got, want) {
		rt.Fatalf("ListSessions(%+v) = %v, model has %v", opts, got, want)
	}
}
