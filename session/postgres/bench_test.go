package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/postgres"
)

// BenchmarkAppendEvents measures committed events per second, appended one
// by one as the pool's recorder does, from 1 or 8 goroutines (8: the group
// commit at work), with commits that wait for the disk.
func BenchmarkAppendEvents(b *testing.B) {
	for _, goroutines := range []int{1, 8} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			name, _ := pgtest.Schema(b)
			st, err := postgres.Open(context.Background(), pgtest.WithParam(pgtest.URL(b), "synchronous_commit", "on"), postgres.Options{Schema: name})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			for g := range goroutines {
				if err := st.CreateSession(ctx, session.Session{ID: fmt.Sprintf("ses_%d", g)}); err != nil {
					b.Fatal(err)
				}
			}
			ev := event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "Hello world, "}}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := g; i < b.N; i += goroutines {
						if err := st.AppendEvents(ctx, fmt.Sprintf("ses_%d", g), ev); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}
