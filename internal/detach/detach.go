// Package detach gives work that must outlive a cancellation (storing what
// a cancelled run did) its context.
package detach

import (
	"context"
	"time"
)

// Context returns a context with the values of ctx that is never
// cancelled: ctx itself when it can never be cancelled (no allocation),
// else a detached context (one allocation).
//
// Not context.WithoutCancel: its Value boxes its struct receiver, one
// allocation per lookup, and a run's store calls look values up (the
// account of the run's writes) once per write. Every session runs under a
// cancellable context of its own (spawn's Runtime.Cancel), so that cost
// would be paid on every write of every run.
func Context(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return &detached{ctx}
}

// detached is ctx's values without its cancellation.
type detached struct{ parent context.Context }

func (*detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*detached) Done() <-chan struct{}       { return nil }
func (*detached) Err() error                  { return nil }

// Value is the parent's value, but for a value that is itself a Context:
// the standard library finds a context's cancellation state (its
// unexported cancelCtx, through context.Cause and AfterFunc) as such a
// value, and a detached context has none, as with context.WithoutCancel.
func (d *detached) Value(key any) any {
	v := d.parent.Value(key)
	if _, isCtx := v.(context.Context); isCtx {
		return nil
	}
	return v
}

func (d *detached) String() string { return "detach.Context" }
