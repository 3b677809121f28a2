// Package memory is the in-memory session.Store: nothing touches the disk,
// everything is gone when the process ends. It is safe for concurrent use
// and passes the session/storetest conformance suite.
//
// Sessions and messages are deep copies on the way in and on the way out,
// so a caller can never change what the store holds. Events are kept as the
// values they were appended as (the runtime never touches an event after
// emitting it, see package event).
package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// Store is an in-memory session.Store. The zero value is not usable; call New.
type Store struct {
	mu        sync.RWMutex
	sessions  map[string]*entry
	globalSeq int64
	closed    bool
}

type entry struct {
	s        session.Session
	children []string
	msgs     []session.Message
	events   []session.Record
}

// New returns an empty store.
func New() *Store { return &Store{sessions: map[string]*entry{}} }

var _ session.Store = (*Store)(nil)

func notFound(id string) error { return fmt.Errorf("%w: %s", session.ErrNotFound, id) }

func clone(s session.Session) session.Session {
	s.Metadata = session.CloneMetadata(s.Metadata)
	return s
}

// CreateSession implements session.Store.
func (st *Store) CreateSession(_ context.Context, s session.Session) error {
	if s.ID == "" {
		return errors.New("memory: session id is empty")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return session.ErrClosed
	}
	if _, ok := st.sessions[s.ID]; ok {
		return fmt.Errorf("%w: %s", session.ErrExists, s.ID)
	}
	if s.ParentID != "" {
		p, ok := st.sessions[s.ParentID]
		if !ok {
			return notFound(s.ParentID)
		}
		p.children = append(p.children, s.ID)
	}
	now := time.Now()
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	st.sessions[s.ID] = &entry{s: clone(s), events: make([]session.Record, 0, 8)}
	return nil
}

// GetSession implements session.Store.
func (st *Store) GetSession(_ context.Context, id string) (session.Session, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return session.Session{}, session.ErrClosed
	}
	e, ok := st.sessions[id]
	if !ok {
		return session.Session{}, notFound(id)
	}
	return clone(e.s), nil
}

// UpdateSession implements session.Store.
func (st *Store) UpdateSession(_ context.Context, id string, fn func(*session.Session)) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return session.ErrClosed
	}
	e, ok := st.sessions[id]
	if !ok {
		return notFound(id)
	}
	s := clone(e.s)
	fn(&s)
	s.ID, s.ParentID, s.Depth, s.CreatedAt = e.s.ID, e.s.ParentID, e.s.Depth, e.s.CreatedAt
	s.UpdatedAt = time.Now()
	// fn may have kept a reference to s.Metadata: store a copy of its own.
	e.s = clone(s)
	return nil
}

// ListSessions implements session.Store.
func (st *Store) ListSessions(_ context.Context, opts session.ListOptions) ([]session.Session, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return nil, session.ErrClosed
	}
	var out []session.Session
	for _, e := range st.sessions {
		if opts.RootsOnly && e.s.ParentID != "" {
			continue
		}
		if opts.ParentID != "" && e.s.ParentID != opts.ParentID {
			continue
		}
		out = append(out, clone(e.s))
	}
	slices.SortFunc(out, func(a, b session.Session) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		// Session ids are descending: smaller sorts newer.
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

// DeleteSession implements session.Store.
func (st *Store) DeleteSession(_ context.Context, id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return session.ErrClosed
	}
	e, ok := st.sessions[id]
	if !ok {
		return notFound(id)
	}
	if p, ok := st.sessions[e.s.ParentID]; ok {
		p.children = slices.DeleteFunc(p.children, func(c string) bool { return c == id })
	}
	// Iterative, so that a deep tree cannot exhaust the stack.
	stack := []string{id}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if e, ok := st.sessions[cur]; ok {
			stack = append(stack, e.children...)
			delete(st.sessions, cur)
		}
	}
	return nil
}

// AppendMessages implements session.Store.
func (st *Store) AppendMessages(_ context.Context, sessionID string, msgs ...session.Message) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return session.ErrClosed
	}
	e, ok := st.sessions[sessionID]
	if !ok {
		return notFound(sessionID)
	}
	for _, m := range msgs {
		m = session.CloneMessage(m)
		m.SessionID = sessionID
		e.msgs = append(e.msgs, m)
	}
	return nil
}

// Messages implements session.Store.
func (st *Store) Messages(_ context.Context, sessionID string) ([]session.Message, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return nil, session.ErrClosed
	}
	e, ok := st.sessions[sessionID]
	if !ok {
		return nil, notFound(sessionID)
	}
	out := make([]session.Message, len(e.msgs))
	for i, m := range e.msgs {
		out[i] = session.CloneMessage(m)
	}
	return out, nil
}

// AppendEvents implements session.Store.
func (st *Store) AppendEvents(_ context.Context, sessionID string, evs ...event.Event) error {
	for _, ev := range evs {
		if err := check(ev); err != nil {
			return err
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return session.ErrClosed
	}
	e, ok := st.sessions[sessionID]
	if !ok {
		return notFound(sessionID)
	}
	now := time.Now()
	for _, ev := range evs {
		st.globalSeq++
		e.events = append(e.events, session.Record{
			SessionID: sessionID, Seq: int64(len(e.events)) + 1, GlobalSeq: st.globalSeq, Time: now, Event: ev,
		})
	}
	return nil
}

// check rejects what could not be encoded on the wire: nil events and
// subagent wrappers around nothing or around another wrapper.
func check(ev event.Event) error {
	if ev == nil {
		return errors.New("memory: append nil event")
	}
	if s, ok := ev.(event.Subagent); ok {
		if s.Event == nil {
			return errors.New("memory: subagent event wraps no event")
		}
		if _, nested := s.Event.(event.Subagent); nested {
			return errors.New("memory: subagent event wraps a subagent event")
		}
	}
	return nil
}

// Events implements session.Store.
func (st *Store) Events(_ context.Context, sessionID string, afterSeq int64) ([]session.Record, error) {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return nil, session.ErrClosed
	}
	e, ok := st.sessions[sessionID]
	if !ok {
		return nil, notFound(sessionID)
	}
	if afterSeq < 0 {
		afterSeq = 0
	}
	if afterSeq >= int64(len(e.events)) {
		return nil, nil
	}
	return slices.Clone(e.events[afterSeq:]), nil
}

// Flush implements session.Store; memory writes are immediate.
func (st *Store) Flush(context.Context) error {
	st.mu.RLock()
	defer st.mu.RUnlock()
	if st.closed {
		return session.ErrClosed
	}
	return nil
}

// Close implements session.Store. The contents are released; every later
// call returns session.ErrClosed.
func (st *Store) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	st.sessions = map[string]*entry{}
	return nil
}
