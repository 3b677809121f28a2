// The write API of the Store: each call becomes an op for the writer goroutine.

package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// CreateSession implements session.Store. It returns once the session is
// committed, or, for a run that defers its commits (session.WriteOptions), once it is
// applied in the open transaction (committed later, before any write
// queued after it).
func (s *Store) CreateSession(ctx context.Context, sess session.Session) error {
	if sess.ID == "" {
		return errors.New("sqlite: session id is empty")
	}
	if sess.ParentID == sess.ID {
		// The foreign key would find the row itself: a session that is its
		// own parent is a cycle every walk up or down the tree runs into.
		return notFound(sess.ParentID)
	}
	now := time.Now()
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = now
	}
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.CreatedAt
	}
	args, err := sessionArgs(sess)
	if err != nil {
		return fmt.Errorf("sqlite: session %s: %w", sess.ID, err)
	}
	o := &op{kind: opCreate, deferred: s.deferred(ctx), sid: sess.ID, lost: session.WritesOf(ctx), opSync: &opSync{pid: sess.ParentID, args: args}}
	o.rec = stored(sess, args[len(args)-1])
	return s.call(ctx, o)
}

// UpdateSession implements session.Store. fn runs inside the writer's
// transaction; a panic in fn is raised again in the caller. It returns
// once committed, or applied (see CreateSession).
func (s *Store) UpdateSession(ctx context.Context, id string, fn func(*session.Session)) error {
	return s.call(ctx, &op{kind: opUpdate, deferred: s.deferred(ctx), sid: id, lost: session.WritesOf(ctx), opSync: &opSync{fn: fn}})
}

// deferred reports whether a create or update made with ctx may be
// answered before its commit (session.WriteOptions.DeferCommits).
func (s *Store) deferred(ctx context.Context) bool {
	return s.opts.Linger > 0 && session.WritesOf(ctx).CommitsDeferred()
}

// DeleteSession implements session.Store.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.call(ctx, &op{kind: opDelete, sid: id, lost: session.WritesOf(ctx)})
}

// AppendEvents implements session.Store. The events are encoded at once and
// committed by the writer; see Flush.
func (s *Store) AppendEvents(ctx context.Context, sessionID string, evs ...event.Event) error {
	o := &op{kind: opEvents, sid: sessionID, at: time.Now().UnixNano(), evs: make([]encEvent, len(evs)), lost: session.WritesOf(ctx)}
	for i, e := range evs {
		b, err := event.Marshal(e)
		if err != nil {
			return session.ReportWrite(ctx, len(evs), fmt.Errorf("sqlite: session %s: %w", sessionID, err))
		}
		o.evs[i] = encEvent{kind: string(e.Kind()), data: string(b)}
	}
	return s.enqueueAsync(ctx, o)
}

// AppendMessages implements session.Store.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...session.Message) error {
	o := &op{kind: opMessages, sid: sessionID, msgs: make([]encMessage, len(msgs)), lost: session.WritesOf(ctx)}
	for i, m := range msgs {
		em := encMessage{id: m.ID, agent: m.AgentName, role: string(m.Role), synthetic: m.Synthetic, created: unixNano(m.CreatedAt), parts: make([]encPart, len(m.Parts))}
		for k, p := range m.Parts {
			ep := encPart{kind: string(p.Kind), text: p.Text, callID: p.ToolCallID, tool: p.ToolName, isError: p.IsError}
			if p.Args != nil {
				ep.args = string(p.Args)
			}
			em.parts[k] = ep
		}
		o.msgs[i] = em
	}
	return s.enqueueAsync(ctx, o)
}

// Flush implements session.Store: it returns once every write accepted
// before the call is committed, with the first write error, if any, that
// could not be committed since the store was opened.
func (s *Store) Flush(ctx context.Context) error {
	if err := s.barrier(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.werr
}

// Close implements session.Store: it flushes, stops the writer and closes
// the database. Closing twice is a no-op.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		o := &op{kind: opStop, done: make(chan result, 1), opSync: &opSync{}}
		s.mu.Lock()
		s.closed = true
		s.queue = append(s.queue, o)
		s.syncOps = true
		s.space.Broadcast()
		s.mu.Unlock()
		signal(s.wake)
		signal(s.urgent)
		<-o.done
		<-s.done
		if s.beatStop != nil {
			close(s.beatStop)
			<-s.beatDone
			close(s.ckptStop)
			<-s.ckptDone
		}
		_, delErr := s.db.Exec(`DELETE FROM claims WHERE instance = ?`, s.instance)
		if delErr == nil {
			_, delErr = s.db.Exec(`DELETE FROM instances WHERE id = ?`, s.instance)
		}
		if delErr == nil {
			s.unlock()
		} else {
			// The row stays (a full disk): so does the lock file, free
			// once closed, by which the next store sees this one dead
			// at once (without it only the lease would, owner.go) and
			// recovers its running sessions.
			s.releaseLock()
		}
		s.stmts.close()
		if s.wconn != nil {
			s.wconn.Close()
		}
		s.mu.Lock()
		werr := s.werr
		s.mu.Unlock()
		s.closeErr = errors.Join(werr, delErr, s.db.Close())
	})
	return s.closeErr
}

// barrier waits for every op queued before it.
func (s *Store) barrier(ctx context.Context) error {
	return s.call(ctx, &op{kind: opBarrier})
}

// call queues a synchronous op and waits for its commit. A write (create,
// update, delete) is always waited for, so that the caller learns what
// happened to it; only a barrier gives up when ctx ends.
func (s *Store) call(ctx context.Context, o *op) error {
	o.done = make(chan result, 1)
	if o.opSync == nil {
		o.opSync = &opSync{}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if o.isWrite() {
			o.lost.Lost(1, s.failure(session.ErrClosed))
		}
		return session.ErrClosed
	}
	s.queue = append(s.queue, o)
	if !s.writing && !s.stopped {
		// Nobody commits: commit the queue here, without waking the
		// writer goroutine (adaptive batching: at once when idle).
		batch := s.take()
		s.mu.Unlock()
		s.commitHere(batch)
	} else {
		s.syncOps = true
		s.mu.Unlock()
		signal(s.wake)
		signal(s.urgent)
	}
	var r result
	if o.kind == opBarrier {
		select {
		case r = <-o.done:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	} else {
		r = <-o.done
	}
	if r.panicked {
		panic(r.panicV)
	}
	return r.err
}

// commitHere applies batch on the caller's goroutine, which holds the
// writer's turn, and gives the turn back even if that panics.
func (s *Store) commitHere(batch []*op) {
	stopped := false
	defer func() { s.release(stopped) }()
	stopped = s.process(batch, false)
}

// enqueueAsync checks that the session exists, waits for room in the
// queue and queues o. The append of a run that lost a write already is
// counted lost and dropped (session.CheckWrite), without an error: an
// append is answered before its commit, and the run learns of its losses
// from its session.RunWrites.
func (s *Store) enqueueAsync(ctx context.Context, o *op) error {
	items := o.items()
	if o.lost.Failed() {
		o.lost.Lost(items, session.ErrEarlierWriteLost)
		return nil
	}
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			o.lost.Lost(items, s.failure(session.ErrClosed))
			return session.ErrClosed
		}
		pk, ok := s.pks[o.sid]
		if !ok {
			gen := s.deleteGen
			s.mu.Unlock()
			pk, err := s.lookup(ctx, o.sid)
			if err != nil {
				return session.ReportWrite(ctx, items, err)
			}
			if pk == 0 {
				return notFound(o.sid)
			}
			s.mu.Lock()
			if s.deleteGen == gen {
				s.remember(o.sid, pk)
			}
			continue
		}
		if items > 0 && s.queued >= s.opts.MaxPending {
			s.space.Wait()
			continue
		}
		o.pk = pk
		break
	}
	if items == 0 {
		s.mu.Unlock()
		return nil
	}
	s.queue = append(s.queue, o)
	s.queued += items
	s.pending++
	urgent := s.queued >= s.opts.BatchSize
	s.mu.Unlock()
	signal(s.wake)
	if urgent {
		signal(s.urgent)
	}
	return nil
}

// remember records that a session exists; s.mu is held.
func (s *Store) remember(id string, pk int64) {
	if len(s.pks) >= maxKnown {
		clear(s.pks)
	}
	s.pks[id] = pk
}
