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

// lostRun is a run that lost writes, as its session is to be settled.
type lostRun struct {
	sid   string
	cause error // the run's *session.NotStoredError
	// created is the record the run created its session with, nil for a
	// resumed session: a new session the store never got is stored
	// failed, a resumed one that is gone was deleted.
	created *session.Session
}

// unsettled lists the runs that lost writes and whose sessions could not
// be marked failed yet, oldest first, one per session.
type unsettled struct {
	mu   sync.Mutex // held while settling: one settler at a time
	runs []lostRun
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

// settleLost marks the session of run as failed, or, when the store fails
// again, keeps it for settlePending.
func (p *Pool) settleLost(run lostRun) {
	p.lost.mu.Lock()
	defer p.lost.mu.Unlock()
	if err := p.settle(run); err != nil {
		p.log.Error("mark the session of a run whose writes were lost as failed; tried again before the next run and at Close",
			"session", run.sid, "err", err)
		p.lost.add(run, p)
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
	for len(p.lost.runs) > 0 {
		run := p.lost.runs[0]
		if err := p.settle(run); err != nil {
			p.log.Warn("mark the session of a run whose writes were lost as failed", "session", run.sid, "err", err)
			return
		}
		p.lost.runs = p.lost.runs[1:]
	}
}

// add keeps run for settlePending (in place of an earlier run of its
// session); p.lost.mu is held.
func (u *unsettled) add(run lostRun, p *Pool) {
	for i, r := range u.runs {
		if r.sid == run.sid {
			if r.created != nil {
				run.created = r.created // the session's first run created it
			}
			u.runs[i] = run
			return
		}
	}
	if len(u.runs) == maxUnsettled {
		p.log.Error("too many sessions wait to be marked failed; one is left as it is stored", "session", u.runs[0].sid)
		u.runs = u.runs[1:]
	}
	u.runs = append(u.runs, run)
}

// settle closes the session of run as failed (session.CloseFailed), under
// a claim of its own, with writes of its own account: nil once they are
// all stored. A session another run holds now is that run's to close (its
// resume closes what is open). A new session of which the store got
// nothing is stored failed, with the run's error.
func (p *Pool) settle(run lostRun) error {
	ctx, writes := session.TrackWrites(context.Background(), session.WriteOptions{})
	err := p.store.Claim(ctx, run.sid)
	if errors.Is(err, session.ErrRunning) {
		p.log.Warn("a run whose writes were lost left its session to another run", "session", run.sid)
		return nil
	}
	if err != nil {
		return err
	}
	err = session.CloseFailed(ctx, p.store, run.sid, run.cause)
	if errors.Is(err, session.ErrNotFound) {
		err = nil
		if run.created != nil {
			rec := *run.created
			rec.Status, rec.StopReason = session.StatusError, event.StopError
			rec.Metadata = map[string]any{"error": run.cause.Error()}
			err = p.store.CreateSession(ctx, rec)
		}
	}
	if rerr := p.store.Release(ctx, run.sid); err == nil {
		err = rerr
	}
	if werr := writes.Err(); werr != nil {
		err = werr // the first loss, not the refusals after it
	}
	return err
}
