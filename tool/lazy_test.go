package tool

import (
	"context"
	"testing"
)

type lazyArgs struct {
	X string `json:"x"`
}

// TestLazyToolSchema: New does not reflect the arguments' schema; the
// first Info does, once, and later Infos reuse it.
func TestLazyToolSchema(t *testing.T) {
	before := schemaBuilds.Load()
	tl := New("lazy", "Lazy.", func(context.Context, Call, lazyArgs) (Result, error) { return Result{}, nil })
	if n := schemaBuilds.Load() - before; n != 0 {
		t.Fatalf("New built %d schemas", n)
	}
	first := tl.Info()
	second := tl.Info()
	if n := schemaBuilds.Load() - before; n != 1 {
		t.Fatalf("two Infos built %d schemas, want 1", n)
	}
	if string(first.Parameters) != `{"properties":{"x":{"type":"string"}},"additionalProperties":false,"type":"object","required":["x"]}` ||
		string(second.Parameters) != string(first.Parameters) || first.Name != "lazy" {
		t.Errorf("Info = %+v, then %s", first, second.Parameters)
	}
}
