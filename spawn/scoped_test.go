package spawn_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
)

// A value kept with RunScoped is made once per root run, shared by the
// children of the run, and ended once the root run (and every child) has
// ended, latest first; a run that ended makes and ends at once.
func TestRunScopedSharedAndEndedWithTheRun(t *testing.T) {
	st := memory.New()
	rt := spawn.NewRuntime(spawn.Config{Store: st})
	sink, _ := eventtest.Collect()
	inv := newRoot(t, st, rt, sink)
	var mu sync.Mutex
	var log []string
	record := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
	}
	keep := func(inv *spawn.Invocation, key string) any {
		return inv.RunScoped(key, func() (any, func()) {
			record("make " + key)
			return key + "-value", func() { record("end " + key) }
		})
	}
	var afterRun *spawn.Invocation
	child := nodeFunc{name: "child", fn: func(_ context.Context, c *spawn.Invocation) spawn.Result {
		if v := keep(c, "proc"); v != "proc-value" {
			t.Errorf("child got %v", v)
		}
		keep(c, "other")
		afterRun = c
		return spawn.Result{Output: "ok"}
	}}
	root := nodeFunc{name: "root", fn: func(ctx context.Context, r *spawn.Invocation) spawn.Result {
		keep(r, "proc")
		for range 2 {
			if _, err := spawn.Spawn(ctx, r, spawn.Request{Node: child, Prompt: "do"}); err != nil {
				t.Error(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if slices.Contains(log, "end proc") {
			t.Error("a value ended before its run")
		}
		return spawn.Result{Output: "done"}
	}}
	rt.RunRoot(context.Background(), root, inv, inv.Session.CreatedAt)
	want := []string{"make proc", "make other", "end other", "end proc"}
	if !slices.Equal(log, want) {
		t.Fatalf("log %q, want %q", log, want)
	}
	keep(afterRun, "late")
	if want = append(want, "make late", "end late"); !slices.Equal(log, want) {
		t.Fatalf("after the run: log %q, want %q", log, want)
	}
}
