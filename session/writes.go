package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// A run's writes and what became of them. Some writes are answered before
// they are durable (appends queued for a writer, writes of a run whose
// commits are deferred: WriteOptions.DeferCommits), so their caller never
// sees a failed commit; a run that wants to know whether everything it
// wrote was kept opens an account with TrackWrites, and the store accounts
// to it for every write made with its context that it did not keep.
//
// The account travels in the run's context, not in an argument, because a
// run's writes are made by every layer of the run (spawn, agent, recorder,
// hooks) through one shared Store, whose methods take a context: the
// account is the one value of that context the Store contract names
// (WritesOf), and how the run's writes may be taken is an explicit option
// of it, not a flag of its own.

// WriteOptions say how a store may take the writes of one run
// (TrackWrites).
type WriteOptions struct {
	// DeferCommits: the run acknowledges nothing outside its process
	// before a later Release or Flush of the same store returns (a pool
	// run hands its result out after its Release). A store may then let
	// the run's CreateSession and UpdateSession return once the write is
	// applied (visible to this store's reads, its constraints checked, fn
	// run) and make it durable with a later commit, at the latest with
	// that Release or Flush. Every write keeps its order: a write is
	// durable only with every write before it. A store may ignore it;
	// other processes may see such a write later than its return. A
	// deferred write that is then not kept is a loss of the account, which
	// is why deferring comes only with one.
	DeferCommits bool
}

// ErrNotStored is the error (errors.Is) of a write, or of a whole run,
// that a store did not keep.
var ErrNotStored = errors.New("not stored")

// ErrEarlierWriteLost refuses a write of a run that lost an earlier one:
// a run's stored writes are a prefix of what it wrote, never a record
// with a hole in it.
var ErrEarlierWriteLost = fmt.Errorf("%w: an earlier write of the run was not stored", ErrNotStored)

// NotStoredError says that a store did not keep writes of a run: how many
// (events, messages and session records) and why, as the store reported
// the first of them (naming the store: "sqlite /path/db: database or disk
// is full").
type NotStoredError struct {
	Writes int
	Err    error
}

func (e *NotStoredError) Error() string {
	n := "1 write"
	if e.Writes != 1 {
		n = fmt.Sprintf("%d writes", e.Writes)
	}
	return fmt.Sprintf("store %v (%s not stored)", e.Err, n)
}

// Is makes errors.Is(err, ErrNotStored) true.
func (e *NotStoredError) Is(target error) bool { return target == ErrNotStored }

// Unwrap returns the store's error.
func (e *NotStoredError) Unwrap() error { return e.Err }

// RunWrites is the account of one run's writes (TrackWrites): the writes
// its store did not keep. Safe for concurrent use.
type RunWrites struct {
	opts   WriteOptions
	failed atomic.Bool // read on every write of the run: no lock
	mu     sync.Mutex
	first  error
	lost   int
}

type writesKey struct{}

// writesContext is ctx with its account: one allocation for both (a run
// makes one).
type writesContext struct {
	context.Context
	w RunWrites
}

func (c *writesContext) Value(key any) any {
	if key == (writesKey{}) {
		return &c.w
	}
	return c.Context.Value(key)
}

// TrackWrites opens the account of a run whose writes are accounted for
// and may be taken as opts says: every store reports to the returned RunWrites each write made with ctx (or a
// context derived from it) that it did not keep, whether or not the call
// returned the error (a write answered before its commit, an append that
// was queued), and refuses the run's writes after the first one it lost
// (ErrEarlierWriteLost; Release excepted). Writes refused because of the
// state of the sessions they name (ErrNotFound, ErrExists, ErrRunning)
// are not losses.
func TrackWrites(ctx context.Context, opts WriteOptions) (context.Context, *RunWrites) {
	c := &writesContext{Context: ctx}
	c.w.opts = opts
	return c, &c.w
}

// WritesOf returns the RunWrites ctx was marked with, or nil.
func WritesOf(ctx context.Context) *RunWrites {
	w, _ := ctx.Value(writesKey{}).(*RunWrites)
	return w
}

// CommitsDeferred reports whether the run's commits may be deferred
// (WriteOptions.DeferCommits). Nil-safe: a write made outside a run's
// account is never deferred.
func (w *RunWrites) CommitsDeferred() bool { return w != nil && w.opts.DeferCommits }

// Lost records that n writes were not kept, because of err. Nil-safe.
func (w *RunWrites) Lost(n int, err error) {
	if w == nil || n <= 0 {
		return
	}
	w.mu.Lock()
	if w.first == nil {
		w.first = err
	}
	w.lost += n
	w.mu.Unlock()
	w.failed.Store(true)
}

// Failed reports whether a write was lost. Nil-safe.
func (w *RunWrites) Failed() bool { return w != nil && w.failed.Load() }

// Err returns nil when every write was kept, else a *NotStoredError.
func (w *RunWrites) Err() error {
	if !w.Failed() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return &NotStoredError{Writes: w.lost, Err: w.first}
}

// CheckWrite is what a store calls before it takes a write of n items
// made with ctx: ErrEarlierWriteLost (and the write counted as lost) when
// the run of ctx lost a write already, else nil.
func CheckWrite(ctx context.Context, n int) error {
	return WritesOf(ctx).Check(n)
}

// Check is CheckWrite for the writes of the run w accounts for (nil: a
// write outside a run's account), for a store that found w once for many
// writes (session.EventLog). Nil-safe.
func (w *RunWrites) Check(n int) error {
	if !w.Failed() {
		return nil
	}
	w.Lost(n, ErrEarlierWriteLost)
	return ErrEarlierWriteLost
}

// ReportWrite is what a store calls with the outcome of a write of n items
// made with ctx: an error that says the write was not kept is counted in
// ctx's RunWrites (the first one is kept as the cause). Not losses: nil,
// a refusal for the state of the sessions (ErrNotFound, ErrExists,
// ErrRunning), the write's own context ending (the caller gave it up), and
// ErrEarlierWriteLost (CheckWrite counted it). It returns err.
func ReportWrite(ctx context.Context, n int, err error) error {
	if err == nil || !lost(ctx, err) {
		return err
	}
	WritesOf(ctx).Lost(n, err)
	return err
}

func lost(ctx context.Context, err error) bool {
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrExists), errors.Is(err, ErrRunning),
		errors.Is(err, ErrEarlierWriteLost):
		return false
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return false
	}
	return true
}
