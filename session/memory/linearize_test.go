// A linearizability check of the store under concurrent use: appends and
// reads of a session's messages and events take only the session's lock
// (not the store-wide one), so they are checked here against creates,
// updates, deletes, evictions, claims and Close running at the same time.

package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// Several goroutines run random operations on three session ids of a
// store bounded to two roots; the history (each operation with the
// times of its call and return) must be explained by some order
// of the operations that respects real time and that a sequential model
// of the store answers the same way. An append that lands in a session
// after its delete or its eviction, is lost to a read that follows it, or
// is seen by a read that returned before it was called, fails this.
func TestLinearizable(t *testing.T) {
	const rounds, workers, perWorker = 300, 3, 8
	for r := range rounds {
		seed := uint64(r)
		h := runHistory(seed, workers, perWorker)
		if !linearizable(h) {
			var b strings.Builder
			for _, o := range h {
				fmt.Fprintf(&b, "  [%d,%d] %s -> %s\n", o.call, o.ret, o.desc(), o.res)
			}
			t.Fatalf("round %d (seed %d): no sequential order explains the history:\n%s", r, seed, b.String())
		}
	}
}

type opKind int

const (
	opCreate opKind = iota
	opFinish
	opRestart
	opDelete
	opAppendEvent
	opEvents
	opAppendMessage
	opMessages
	opClaim
	opRelease
	opClose
	numOps
)

var opNames = [...]string{"create", "finish", "restart", "delete", "append-event", "events", "append-message", "messages", "claim", "release", "close"}

var ids = []string{"a", "b", "c"}

type op struct {
	kind      opKind
	id        string
	parent    string // opCreate: "" for a root
	tag       int    // opAppendEvent, opAppendMessage: unique in the history
	call, ret int64
	res       string // the outcome: an error class, or what a read saw
}

func (o op) desc() string {
	s := opNames[o.kind] + " " + o.id
	if o.kind == opCreate && o.parent != "" {
		s += " under " + o.parent
	}
	if o.tag != 0 {
		s += fmt.Sprintf(" #%d", o.tag)
	}
	return s
}

// stall makes the operations of the other workers overlap, even on one
// core: it holds session id's own lock (an append that takes long), or
// the store's lock (a create or update that takes long), and yields a few
// times meanwhile, so that their operations start and wait inside the
// store, where the lock-free lookup of a session meets its removal.
func stall(st *Store, id string, rng *rand.Rand) {
	if rng.IntN(2) == 0 {
		st.mu.Lock()
		defer st.mu.Unlock()
	} else if v, ok := st.live.Load(id); ok {
		e := v.(*entry)
		e.mu.Lock()
		defer e.mu.Unlock()
	}
	for range 1 + rng.IntN(4) {
		runtime.Gosched()
	}
}

// runHistory runs workers goroutines of perWorker random operations each
// on a fresh store and returns what they did.
func runHistory(seed uint64, workers, perWorker int) []op {
	ctx := context.Background()
	st := New(WithMaxRoots(2))
	// The monotonic clock times the calls and returns: an atomic counter
	// would order the workers' memory accesses for the race detector and
	// hide the races of the store.
	base := time.Now()
	hist := make([][]op, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := range perWorker {
				o := op{kind: opKind(rng.IntN(int(numOps) - 1)), id: ids[rng.IntN(len(ids))]}
				if rng.IntN(60) == 0 {
					o.kind = opClose
				}
				switch o.kind {
				case opCreate:
					if p := ids[rng.IntN(len(ids))]; p != o.id && rng.IntN(2) == 0 {
						o.parent = p
					}
				case opAppendEvent, opAppendMessage:
					o.tag = 1 + w*perWorker + i
				}
				if rng.IntN(3) == 0 {
					stall(st, ids[rng.IntN(len(ids))], rng)
				}
				o.call = int64(time.Since(base))
				o.res = apply(ctx, st, o)
				o.ret = int64(time.Since(base))
				hist[w] = append(hist[w], o)
			}
		})
	}
	wg.Wait()
	return slices.Concat(hist...)
}

// apply runs o on the store and describes its outcome.
func apply(ctx context.Context, st *Store, o op) string {
	var err error
	switch o.kind {
	case opCreate:
		err = st.CreateSession(ctx, session.Session{ID: o.id, ParentID: o.parent, Status: session.StatusRunning})
	case opFinish, opRestart:
		status := session.StatusCompleted
		if o.kind == opRestart {
			status = session.StatusRunning
		}
		err = st.UpdateSession(ctx, o.id, func(s *session.Session) { s.Status = status })
	case opDelete:
		err = st.DeleteSession(ctx, o.id)
	case opAppendEvent:
		err = st.AppendEvents(ctx, o.id, event.PartEnd{Index: o.tag})
	case opAppendMessage:
		err = st.AppendMessages(ctx, o.id, session.Message{ID: fmt.Sprint(o.tag), Message: model.UserText("m")})
	case opEvents:
		var recs []session.Record
		if recs, err = st.Events(ctx, o.id, 0); err == nil {
			seen := make([]int, len(recs))
			for i, r := range recs {
				if r.Seq != int64(i+1) {
					return fmt.Sprintf("seq %d at %d", r.Seq, i)
				}
				seen[i] = r.Event.(event.PartEnd).Index
			}
			return fmt.Sprint(seen)
		}
	case opMessages:
		var msgs []session.Message
		if msgs, err = st.Messages(ctx, o.id); err == nil {
			seen := make([]int, len(msgs))
			for i, m := range msgs {
				fmt.Sscan(m.ID, &seen[i])
			}
			return fmt.Sprint(seen)
		}
	case opClaim:
		err = st.Claim(ctx, o.id)
	case opRelease:
		err = st.Release(ctx, o.id)
	case opClose:
		err = st.Close()
	}
	return errClass(err)
}

func errClass(err error) string {
	var running *session.RunningError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, session.ErrClosed):
		return "closed"
	case errors.Is(err, session.ErrNotFound):
		return "not found"
	case errors.Is(err, session.ErrExists):
		return "exists"
	case errors.As(err, &running):
		return "running"
	}
	return err.Error()
}

// linearizable searches for an order of h that respects real time (an
// operation that returned before another was called comes first) and in
// which the model gives every operation the outcome it had.
func linearizable(h []op) bool {
	full := uint64(1)<<len(h) - 1
	failed := map[string]bool{}
	var search func(done uint64, m *spec) bool
	search = func(done uint64, m *spec) bool {
		if done == full {
			return true
		}
		key := fmt.Sprint(done, m.key())
		if failed[key] {
			return false
		}
		// The candidates: pending operations called before every pending
		// operation returned.
		firstRet := int64(1 << 62)
		for i, o := range h {
			if done&(1<<i) == 0 {
				firstRet = min(firstRet, o.ret)
			}
		}
		for i, o := range h {
			if done&(1<<i) != 0 || o.call > firstRet {
				continue
			}
			next := m.clone()
			if next.apply(o) == o.res && search(done|1<<i, next) {
				return true
			}
		}
		failed[key] = true
		return false
	}
	return search(0, newSpec())
}

// spec is the sequential model of the store: what each operation does
// to it, one at a time.
type spec struct {
	closed   bool
	sessions map[string]*specSession
	roots    []string // in creation order
	claims   map[string]bool
}

type specSession struct {
	parent   string
	running  bool
	events   []int
	messages []int
}

func newSpec() *spec {
	return &spec{sessions: map[string]*specSession{}, claims: map[string]bool{}}
}

func (m *spec) clone() *spec {
	c := &spec{closed: m.closed, sessions: map[string]*specSession{}, roots: slices.Clone(m.roots), claims: map[string]bool{}}
	for id, s := range m.sessions {
		cs := *s
		cs.events, cs.messages = slices.Clone(s.events), slices.Clone(s.messages)
		c.sessions[id] = &cs
	}
	for id := range m.claims {
		c.claims[id] = true
	}
	return c
}

func (m *spec) key() string {
	var b strings.Builder
	fmt.Fprint(&b, m.closed, m.roots)
	for _, id := range ids {
		if s, ok := m.sessions[id]; ok {
			fmt.Fprint(&b, id, s.parent, s.running, s.events, s.messages)
		}
		fmt.Fprint(&b, m.claims[id])
	}
	return b.String()
}

func (m *spec) apply(o op) string {
	if o.kind == opClose {
		m.closed = true
		return "ok"
	}
	if m.closed {
		return "closed"
	}
	if o.kind == opClaim || o.kind == opRelease {
		return m.claim(o)
	}
	s, ok := m.sessions[o.id]
	if o.kind == opCreate {
		if ok {
			return "exists"
		}
		if o.parent != "" && m.sessions[o.parent] == nil {
			return "not found"
		}
		if o.parent == "" {
			m.makeRoom()
			m.roots = append(m.roots, o.id)
		}
		m.sessions[o.id] = &specSession{parent: o.parent, running: true}
		return "ok"
	}
	if !ok {
		return "not found"
	}
	switch o.kind {
	case opFinish, opRestart:
		s.running = o.kind == opRestart
	case opDelete:
		m.remove(o.id)
	case opAppendEvent:
		s.events = append(s.events, o.tag)
	case opAppendMessage:
		s.messages = append(s.messages, o.tag)
	case opEvents:
		return fmt.Sprint(orEmpty(s.events))
	case opMessages:
		return fmt.Sprint(orEmpty(s.messages))
	}
	return "ok"
}

func orEmpty(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

// makeRoom drops the oldest finished root trees while two roots are kept
// (WithMaxRoots(2)); running roots stay.
func (m *spec) makeRoom() {
	for len(m.roots) >= 2 {
		i := slices.IndexFunc(m.roots, func(id string) bool { return !m.sessions[id].running })
		if i < 0 {
			return
		}
		m.remove(m.roots[i])
	}
}

// remove deletes id and its subtree.
func (m *spec) remove(id string) {
	for cid, s := range m.sessions {
		if s.parent == id {
			m.remove(cid)
		}
	}
	delete(m.sessions, id)
	m.roots = slices.DeleteFunc(m.roots, func(r string) bool { return r == id })
}

// claim: a claim is refused while the session, one of its ancestors or
// one of its descendants is claimed; claims outlive their sessions.
func (m *spec) claim(o op) string {
	if o.kind == opRelease {
		delete(m.claims, o.id)
		return "ok"
	}
	if m.claims[o.id] {
		return "running"
	}
	for c := range m.claims {
		if m.above(c, o.id) || m.above(o.id, c) {
			return "running"
		}
	}
	m.claims[o.id] = true
	return "ok"
}

// above says whether a is a proper ancestor of b.
func (m *spec) above(a, b string) bool {
	s, ok := m.sessions[b]
	for ok && s.parent != "" {
		if s.parent == a {
			return true
		}
		s, ok = m.sessions[s.parent]
	}
	return false
}
