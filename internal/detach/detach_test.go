package detach

import (
	"context"
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
