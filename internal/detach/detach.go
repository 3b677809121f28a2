// Package detach gives work that must outlive a cancellation (storing what
// a cancelled run did) its context.
package detach

import (
	"context"
	"time"
)

// Context returns a context with the values of ctx that is never
// cancelled: ctx itself when it can never be cancelled (no allocation),
// else a detached view of ctx (one allocation, made once).
//
// It is context.WithoutCancel but for the cost of Value: WithoutCancel's
// allocates on every call (Go 1.26 boxes its struct to walk the parents),
// and a recorder's context has a value read for every event it stores (the
// run's write account, session.WritesOf).
func Context(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return &detached{parent: ctx}
}

// detached is a context with the values of parent and without its
// deadline and cancellation. A pointer, so that Value boxes nothing.
type detached struct{ parent context.Context }

func (*detached) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done is nil: the context package then never ties a child of it to a
// canceller of the parent (it asks Done before it looks for one).
func (*detached) Done() <-chan struct{} { return nil }
func (*detached) Err() error            { return nil }
func (*detached) String() string        { return "detach.Context" }

// Value is the parent's value. The context package also asks it for the
// parent's canceller (context.Cause, propagation to children), but only
// after Err or Done said there is one, and they never do.
func (d *detached) Value(key any) any { return d.parent.Value(key) }
