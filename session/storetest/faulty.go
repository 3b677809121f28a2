package storetest

import (
	"context"
	"fmt"
	"sync"
	"syscall"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// ErrDiskFull is the error of the writes a Faulty store fails: it wraps
// syscall.ENOSPC, as a full disk's does.
var ErrDiskFull = fmt.Errorf("faulty store: %w", syscall.ENOSPC)

// Faulty is a session.Store that fails writes like a full disk: once armed
// (FailAfter), every write (CreateSession, UpdateSession, DeleteSession,
// AppendMessages, AppendEvents, Release) after the first n fails with
// ErrDiskFull and changes nothing, until Lift. Reads and claims pass. It
// keeps the Store contract on lost writes: a failed write made with a
// context of session.TrackWrites is counted lost, the run's later writes
// are refused, and a failed Release still ends the claim. Safe for
// concurrent use.
type Faulty struct {
	session.Store

	mu     sync.Mutex
	armed  bool
	left   int // writes that still pass while armed
	writes int // writes taken (passed or failed)
	failed int // writes failed
}

// NewFaulty wraps st; nothing fails before FailAfter.
func NewFaulty(st session.Store) *Faulty { return &Faulty{Store: st} }

// FailAfter lets the next n writes pass and fails the ones after them.
func (f *Faulty) FailAfter(n int) {
	f.mu.Lock()
	f.armed, f.left = true, n
	f.mu.Unlock()
}

// Lift lets every write pass again: the disk has room.
func (f *Faulty) Lift() {
	f.mu.Lock()
	f.armed = false
	f.mu.Unlock()
}

// Writes returns how many writes were taken, passed or failed.
func (f *Faulty) Writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// Failed returns how many writes failed.
func (f *Faulty) Failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// Unwrap returns the wrapped store.
func (f *Faulty) Unwrap() session.Store { return f.Store }

// take counts a write and reports whether it fails.
func (f *Faulty) take() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	switch {
	case f.armed && f.left == 0:
		f.failed++
		return true
	case f.armed:
		f.left--
	}
	return false
}

// write decides the fate of a write of n items made with ctx: nil when it
// goes to the wrapped store, else its error (counted lost).
func (f *Faulty) write(ctx context.Context, n int) error {
	if err := session.CheckWrite(ctx, n); err != nil {
		return err
	}
	if f.take() {
		return session.ReportWrite(ctx, n, ErrDiskFull)
	}
	return nil
}

// CreateSession implements session.Store.
func (f *Faulty) CreateSession(ctx context.Context, s session.Session) error {
	if err := f.write(ctx, 1); err != nil {
		return err
	}
	return f.Store.CreateSession(ctx, s)
}

// UpdateSession implements session.Store.
func (f *Faulty) UpdateSession(ctx context.Context, id string, fn func(*session.Session)) error {
	if err := f.write(ctx, 1); err != nil {
		return err
	}
	return f.Store.UpdateSession(ctx, id, fn)
}

// DeleteSession implements session.Store.
func (f *Faulty) DeleteSession(ctx context.Context, id string) error {
	if err := f.write(ctx, 1); err != nil {
		return err
	}
	return f.Store.DeleteSession(ctx, id)
}

// AppendMessages implements session.Store.
func (f *Faulty) AppendMessages(ctx context.Context, sessionID string, msgs ...session.Message) error {
	if err := f.write(ctx, len(msgs)); err != nil {
		return err
	}
	return f.Store.AppendMessages(ctx, sessionID, msgs...)
}

// AppendEvents implements session.Store.
func (f *Faulty) AppendEvents(ctx context.Context, sessionID string, evs ...event.Event) error {
	if err := f.write(ctx, len(evs)); err != nil {
		return err
	}
	return f.Store.AppendEvents(ctx, sessionID, evs...)
}

// Release implements session.Store: a release that fails still ends the
// claim.
func (f *Faulty) Release(ctx context.Context, sessionID string) error {
	fail := f.take()
	rerr := f.Store.Release(ctx, sessionID)
	if fail {
		return session.ReportWrite(ctx, 1, ErrDiskFull)
	}
	return rerr
}
