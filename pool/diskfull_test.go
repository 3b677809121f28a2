package pool_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/internal/tinyfs"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/session/sqlite"
	"github.com/agentpool/agentpool/session/storetest"
)

// diskFullPool is a delegated run (boss → worker → "boss done") on a store
// that fails like a full disk once armed.
func diskFullPool(t *testing.T) (*pool.Pool, *storetest.Faulty, *memory.Store) {
	t.Helper()
	m, err := config.Parse("diskfull.yaml", []byte(faultManifest("", `
      type: scripted
      turns: ["worker done"]`, "")))
	if err != nil {
		t.Fatal(err)
	}
	inner := memory.New()
	st := storetest.NewFaulty(inner)
	p, err := pool.New(m, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return p, st, inner
}

// TestDiskFullDuringRun (the pool's part): whichever write of a delegated
// run is the first the disk has no room for, the run fails loudly (stop
// reason error, ENOSPC named in its error) with the answer it had still
// in its output and on its stream, and once there is room again the pool
// marks the session failed before its next run: no session of the tree
// reads running, the root reads error, and the stored stream keeps every
// invariant.
func TestDiskFullDuringRun(t *testing.T) {
	p, st, _ := diskFullPool(t)
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "go"}, event.SinkFunc(func(event.Event) {}))
	p.Close()
	if err != nil || res.Result.StopReason != event.StopCompleted {
		t.Fatalf("the run without a fault: %v, %v", res.Result.StopReason, err)
	}
	writes := st.Writes()
	if writes < 10 {
		t.Fatalf("a delegated run took %d writes", writes)
	}
	answered := 0
	for n := range writes {
		failed, gotAnswer := diskFullAfter(t, n)
		if gotAnswer {
			answered++
		}
		if !failed {
			t.Fatalf("fault after %d of %d writes: the run did not fail", n, writes)
		}
	}
	if answered == 0 {
		t.Error("no fault came late enough for the run to have its answer")
	}
}

// diskFullAfter runs the delegated run on a disk that is full after n
// writes and checks what TestDiskFullDuringRun says. It reports whether
// the run failed and whether it had its answer.
func diskFullAfter(t *testing.T, n int) (failed, answered bool) {
	t.Helper()
	p, st, inner := diskFullPool(t)
	defer p.Close()
	ctx := context.Background()
	st.FailAfter(n)
	sink, events := eventtest.Collect()
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, sink)
	if err != nil {
		// The root's own record did not fit: the run did not start.
		if !errors.Is(err, syscall.ENOSPC) || len(events()) != 0 {
			t.Fatalf("fault after %d writes: the run did not start with %v and streamed %d events", n, err, len(events()))
		}
		return true, false
	}
	evs := events()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Fatalf("fault after %d writes: the live stream: %v", n, err)
	}
	r := res.Result
	if r.StopReason != event.StopError || !errors.Is(r.Err, session.ErrNotStored) || !errors.Is(r.Err, syscall.ENOSPC) {
		t.Fatalf("fault after %d writes: the run ended %s (%v), want error, not stored, ENOSPC", n, r.StopReason, r.Err)
	}
	if !strings.Contains(r.Err.Error(), "store faulty store: no space left on device") {
		t.Errorf("fault after %d writes: the error %q does not name the store and the cause", n, r.Err)
	}
	answered = r.Output == "boss done"
	if answered && !strings.Contains(rootText(evs), "boss done") {
		t.Errorf("fault after %d writes: the answer is in the output, not on the stream", n)
	}

	// The disk has room again: the next run marks the session failed.
	st.Lift()
	if _, err := p.RunSink(ctx, pool.RunRequest{Prompt: "again"}, event.SinkFunc(func(event.Event) {})); err != nil {
		t.Fatal(err)
	}
	tree, err := session.Subtree(ctx, inner, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tree {
		if s.Status == session.StatusRunning {
			t.Errorf("fault after %d writes: session %s (%s) reads running", n, s.ID, s.AgentName)
		}
	}
	root := tree[0]
	if e, _ := root.Metadata["error"].(string); root.Status != session.StatusError || !strings.Contains(e, "no space left on device") {
		t.Errorf("fault after %d writes: the root reads %s (error %q), want error with the cause", n, root.Status, e)
	}
	replay, err := session.ReplayTree(ctx, inner, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	stored := make([]event.Event, len(replay))
	for i, r := range replay {
		stored[i] = r.Event
	}
	if err := eventtest.CheckInvariants(res.SessionID, stored); err != nil {
		t.Errorf("fault after %d writes: the stored stream: %v", n, err)
	}
	return true, answered
}

// rootText is the text the root streamed itself (its parts' content).
func rootText(evs []event.Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch v := e.(type) {
		case event.PartStart:
			b.WriteString(v.Part.Content)
		case event.PartDelta:
			b.WriteString(v.Delta.ContentDelta)
		}
	}
	return b.String()
}

// TestDiskFullDuringRunSQLite: a delegated run on a SQLite database whose
// file system is full, with a linger longer than the test, so that its
// every write waits for the Release's commit, which cannot fit: nothing
// of the run is stored, yet the run fails with SQLite's error and keeps
// its answer; once there is room, the next run stores the session as
// failed, with the cause.
func TestDiskFullDuringRunSQLite(t *testing.T) {
	disk, err := tinyfs.Mount(t, 4<<20)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("no disk to fill: %v", err)
	}
	path := filepath.Join(disk, "db.sqlite")
	st, err := sqlite.Open(path, sqlite.Options{Linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	m, err := config.Parse("diskfull.yaml", []byte(faultManifest("", `
      type: scripted
      turns: ["worker done"]`, "")))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	filler := tinyfs.Fill(t, disk, 0)

	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, event.SinkFunc(func(event.Event) {}))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Result
	if r.StopReason != event.StopError || !strings.Contains(fmt.Sprint(r.Err), "store sqlite "+path+": database or disk is full") || r.Output != "boss done" {
		t.Fatalf("the run ended %s (%v) with output %q; want error, SQLite's disk-full error and the answer", r.StopReason, r.Err, r.Output)
	}
	if _, err := st.GetSession(ctx, res.SessionID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("the run's session before there is room: %v, want not stored", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunSink(ctx, pool.RunRequest{Prompt: "again"}, event.SinkFunc(func(event.Event) {})); err != nil {
		t.Fatal(err)
	}
	rec, err := st.GetSession(ctx, res.SessionID)
	if e, _ := rec.Metadata["error"].(string); err != nil || rec.Status != session.StatusError || !strings.Contains(e, "database or disk is full") {
		t.Errorf("the session once there is room: %s (error %q), %v; want error with the cause", rec.Status, e, err)
	}
}
