package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// A root run whose store did not keep some of its writes (a full disk, a
// database gone; session.TrackWrites accounts for them) fails: its result
// says so (notStored), and its session is marked failed in the store
// (settle), now or, when the store fails again, before a later run and
// at Close.

// maxUnsettled bounds the sessions that wait to be marked failed. Past it
// the oldest is dropped from the list: it reads as running until a store
// recovers it (SQLite does at its next Open: interrupted).
const maxUnsettled = 1024

// unsettled lists the sessions of runs that lost writes and that could
// not be marked failed yet, with the error of their run.
type unsettled struct {
	mu    sync.Mutex // held while settling: one settler at a time
	order []string
	cause map[string]error
}

// notStored is the result of a run whose store did not keep writes (err, a
// *session.NotStoredError): whatever the node said, the run failed, with
// the store's error; the node's output is kept (the caller still gets the
// answer).
func notStored(r spawn.Result, err error) spawn.Result {
	if r.Err != nil {
		err = fmt.Errorf("%w; the run had ended %s: %v", err, r.StopReason, r.Err)
	}
	r.StopReason, r.Err = event.StopError, err
	return r
}

// settleLost marks the session sid of a run that lost writes as failed,
// or, when the store fails again, keeps it for settlePending.
func (p *Pool) settleLost(sid string, cause error) {
	p.lost.mu.Lock()
	defer p.lost.mu.Unlock()
	if err := p.settle(sid, cause); err != nil {
		p.log.Error("mark the session of a run whose writes were lost as failed; tried again before the next run and at Close",
			"session", sid, "err", err)
		p.lost.add(sid, cause, p)
	}
}

// settlePending marks the sessions that wait for it as failed, in the order
// their runs ended, and stops at the first the store fails again on. A
// caller that finds another one settling goes on without waiting.
func (p *Pool) settlePending(wait bool) {
	if wait {
		p.lost.mu.Lock()
	} else if !p.lost.mu.TryLock() {
		return
	}
	defer p.lost.mu.Unlock()
	for len(p.lost.order) > 0 {
		sid := p.lost.order[0]
		if err := p.settle(sid, p.lost.cause[sid]); err != nil {
			p.log.Warn("mark the session of a run whose writes were lost as failed", "session", sid, "err", err)
			return
		}
		p.lost.order = p.lost.order[1:]
		delete(p.lost.cause, sid)
	}
}

// add keeps sid for settlePending; p.lost.mu is held.
func (u *unsettled) add(sid string, cause error, p *Pool) {
	if u.cause == nil {
		u.cause = map[string]error{}
	}
	if _, ok := u.cause[sid]; ok {
		u.cause[sid] = cause
		return
	}
	if len(u.order) == maxUnsettled {
		p.log.Error("too many sessions wait to be marked failed; one is left as it is stored", "session", u.order[0])
		delete(u.cause, u.order[0])
		u.order = u.order[1:]
	}
	u.order = append(u.order, sid)
	u.cause[sid] = cause
}

// settle closes session sid of a run that lost writes as failed
// (session.CloseFailed), under a claim of its own, with writes of its own
// account: nil once they are all stored. A session another run holds now
// is that run's to close (its resume closes what is open); a session the
// store never got has nothing to settle.
func (p *Pool) settle(sid string, cause error) error {
	ctx, writes := session.TrackWrites(context.Background())
	err := p.store.Claim(ctx, sid)
	if errors.Is(err, session.ErrRunning) {
		p.log.Warn("a run whose writes were lost left its session to another run", "session", sid)
		return nil
	}
	if err != nil {
		return err
	}
	err = session.CloseFailed(ctx, p.store, sid, cause)
	if errors.Is(err, session.ErrNotFound) {
		err = nil
	}
	if rerr := p.store.Release(ctx, sid); err == nil {
		err = rerr
	}
	if werr := writes.Err(); werr != nil {
		err = werr // the first loss, not the refusals after it
	}
	return err
}
