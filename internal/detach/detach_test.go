package detach

import (
	"context"
	"errors"
	"testing"
)

type key struct{}

func TestContext(t *testing.T) {
	bg := context.WithValue(context.Background(), key{}, "v")
	if Context(bg) != bg {
		t.Error("a context that is never cancelled was wrapped")
	}
	ctx, cancel := context.WithCancel(bg)
	d := Context(ctx)
	cancel()
	if d.Err() != nil || d.Done() != nil {
		t.Error("the detached context was cancelled")
	}
	if d.Value(key{}) != "v" {
		t.Error("the detached context lost its values")
	}
}

// A detached context has no cause, derived contexts are not cancelled
// with its parent, and a lookup allocates nothing.
func TestDetachedHidesCancellation(t *testing.T) {
	bg := context.WithValue(context.Background(), key{}, "v")
	ctx, cancel := context.WithCancelCause(bg)
	d := Context(ctx)
	cancel(errors.New("stop"))
	if c := context.Cause(d); c != nil {
		t.Errorf("cause of the detached context: %v", c)
	}
	child, stop := context.WithCancel(d)
	defer stop()
	if child.Err() != nil {
		t.Error("a context derived from the detached one was cancelled")
	}
	if n := testing.AllocsPerRun(100, func() { _ = d.Value(key{}) }); n != 0 {
		t.Errorf("a lookup allocates %v times", n)
	}
}
