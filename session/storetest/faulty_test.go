package storetest_test

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/session/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Unarmed, a Faulty store is the store it wraps.
func TestFaultyConformance(t *testing.T) {
	storetest.Run(t, storetest.Capabilities{MaxRoots: memory.DefaultMaxRoots}, func(t *testing.T) session.Store { return storetest.NewFaulty(memory.New()) })
}

// Armed, it lets n writes pass, fails the rest like a full disk (counted in
// the run's account) until lifted.
func TestFaultyFailsAfterN(t *testing.T) {
	st := storetest.NewFaulty(memory.New())
	defer st.Close()
	bg := context.Background()
	if err := st.CreateSession(bg, session.Session{ID: "ses_1"}); err != nil {
		t.Fatal(err)
	}
	st.FailAfter(1)
	if err := st.AppendEvents(bg, "ses_1", event.PartEnd{}); err != nil {
		t.Fatalf("the write allowed failed: %v", err)
	}
	ctx, writes := session.TrackWrites(bg, session.WriteOptions{})
	if err := st.AppendEvents(ctx, "ses_1", event.PartEnd{}, event.PartEnd{}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past the fault = %v, want ENOSPC", err)
	}
	if err := writes.Err(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("account = %v, want the ENOSPC", err)
	}
	st.Lift()
	if err := st.AppendEvents(bg, "ses_1", event.PartEnd{}); err != nil {
		t.Fatalf("after Lift: %v", err)
	}
	if recs, _ := st.Events(bg, "ses_1", 0); len(recs) != 2 || st.Failed() != 1 {
		t.Fatalf("%d events stored, %d writes failed; want 2 and 1", len(recs), st.Failed())
	}
}
