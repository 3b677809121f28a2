// Package detach gives work that must outlive a cancellation (storing what
// a cancelled run did) its context.
package detach

import "context"

// Context returns a context with the values of ctx that is never
// cancelled: ctx itself when it can never be cancelled (no allocation),
// else context.WithoutCancel(ctx).
func Context(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
