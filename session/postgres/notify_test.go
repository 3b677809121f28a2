package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
)

// next waits for the next notice on ch.
func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case id, ok := <-ch:
		if !ok {
			t.Fatal("notice channel closed")
		}
		return id
	case <-time.After(20 * time.Second):
		t.Fatal("no notice within 20s")
	}
	return ""
}

// An append by one store (process) is noticed by a subscriber of another;
// the channel closes when the subscription's context ends, and when the
// store closes.
func TestNotifyAcrossStores(t *testing.T) {
	name, _ := pgtest.Schema(t)
	a, b := openIn(t, name), openIn(t, name)
	ctx := context.Background()
	for _, id := range []string{"ses_1", "ses_2"} {
		if err := b.CreateSession(ctx, session.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	ch, err := a.SubscribeEvents(sctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AppendEvents(ctx, "ses_2", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	if id := next(t, ch); id != "ses_2" {
		t.Fatalf("notice for %q, want ses_2", id)
	}
	// Its own appends too.
	if err := a.AppendEvents(ctx, "ses_1", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	if id := next(t, ch); id != "ses_1" {
		t.Fatalf("notice for %q, want ses_1", id)
	}
	ch2, err := a.SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range ch {
	}
	// The other subscription goes on until the store closes.
	if err := b.AppendEvents(ctx, "ses_1", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	if id := next(t, ch2); id != "ses_1" {
		t.Fatalf("notice for %q, want ses_1", id)
	}
	a.Close()
	for range ch2 {
	}
	if _, err := a.SubscribeEvents(ctx); err != session.ErrClosed {
		t.Errorf("SubscribeEvents after Close = %v, want ErrClosed", err)
	}
}

// A slow subscriber gets notices coalesced, never lost: many appends to
// three sessions, read afterwards, give a notice for each of the three.
func TestNotifyCoalesced(t *testing.T) {
	name, _ := pgtest.Schema(t)
	a, b := openIn(t, name), openIn(t, name)
	ctx := context.Background()
	ids := []string{"ses_a", "ses_b", "ses_c"}
	for _, id := range ids {
		if err := b.CreateSession(ctx, session.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := a.SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := b.AppendEvents(ctx, ids[i%3], event.PartEnd{Index: i}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for len(got) < 3 {
		got[next(t, ch)] = true
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("no notice for %s", id)
		}
	}
}

// The listening connection is ended (pg_terminate_backend); events
// appended while nobody listens are noticed once the store listens again.
func TestNotifyAfterReconnect(t *testing.T) {
	name, _ := pgtest.Schema(t)
	a, b := openIn(t, name), openIn(t, name)
	ctx := context.Background()
	for _, id := range []string{"ses_1", "ses_2", "ses_3"} {
		if err := b.CreateSession(ctx, session.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := a.SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AppendEvents(ctx, "ses_1", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	if id := next(t, ch); id != "ses_1" {
		t.Fatalf("notice for %q, want ses_1", id)
	}
	// While the listener is away, ses_2 and ses_3 get events.
	lost := make(chan struct{})
	resume := make(chan struct{})
	a.SetBeforeReconnect(func() {
		close(lost)
		<-resume
	})
	pgtest.Exec(t, `SELECT pg_terminate_backend($1)`, int64(a.ListenerPID()))
	select {
	case <-lost:
	case <-time.After(20 * time.Second):
		t.Fatal("the listener did not notice its connection was ended")
	}
	a.SetBeforeReconnect(nil)
	if err := b.AppendEvents(ctx, "ses_3", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendEvents(ctx, "ses_2", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	close(resume)
	got := map[string]bool{}
	for len(got) < 2 {
		got[next(t, ch)] = true
	}
	if !got["ses_2"] || !got["ses_3"] {
		t.Fatalf("notices after reconnecting: %v, want ses_2 and ses_3", got)
	}
	// And it listens again.
	if err := b.AppendEvents(ctx, "ses_1", event.PartEnd{}); err != nil {
		t.Fatal(err)
	}
	if id := next(t, ch); id != "ses_1" {
		t.Fatalf("notice for %q, want ses_1", id)
	}
}
