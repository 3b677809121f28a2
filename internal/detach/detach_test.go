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
	if _, ok := d.Deadline(); ok {
		t.Error("the detached context has a deadline")
	}
	if d.Value(key{}) != "v" {
		t.Error("the detached context lost its values")
	}
}

// TestContextCause checks what context.WithoutCancel guarantees besides
// Err: the parent's cancellation cause is not the detached context's, and
// a context derived from it is not cancelled with the parent.
func TestContextCause(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	d := Context(ctx)
	child, stop := context.WithCancel(d)
	defer stop()
	cancel(errors.New("gone"))
	if err := context.Cause(d); err != nil {
		t.Errorf("Cause of the detached context = %v, want nil", err)
	}
	if child.Err() != nil {
		t.Error("a child of the detached context was cancelled with its parent")
	}
}

func TestContextValueAllocs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	defer cancel()
	d := Context(ctx)
	if n := testing.AllocsPerRun(100, func() { _ = d.Value(key{}) }); n != 0 {
		t.Errorf("Value allocates %.0f times, want 0", n)
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
