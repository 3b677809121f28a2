package session

import "context"

type deferKey struct{}

// DeferCommits marks ctx for a caller that acknowledges nothing outside its
// process before a later Release or Flush of the same store returns (a
// run: its result is handed out after its Release). A store may then let
// CreateSession and UpdateSession made with ctx return once the write is
// applied (visible to this store's reads, its constraints checked, fn
// run) and make it durable with a later commit, at the latest with that
// Release or Flush. Every write keeps its order: a write is durable only
// with every write before it. A store may ignore the mark; other
// processes may see such a write later than its return.
func DeferCommits(ctx context.Context) context.Context {
	if CommitsDeferred(ctx) {
		return ctx
	}
	return context.WithValue(ctx, deferKey{}, true)
}

// CommitsDeferred reports whether ctx was marked by DeferCommits.
func CommitsDeferred(ctx context.Context) bool {
	v, _ := ctx.Value(deferKey{}).(bool)
	return v
}
