package record_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/sessiontree"
)

// BenchmarkSharedRun: producers (parallel children of one root run) emit
// into the run's recorder at once, watched by a projection with a
// subscriber, with a caller's sink that encodes every event (as a
// protocol server's mapper does). One op is one event of each producer.
// Run it with -mutexprofile: the run's lock is the lock they share.
func BenchmarkSharedRun(b *testing.B) {
	for _, producers := range []int{8} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			ctx := context.Background()
			st := memory.New()
			const root = "ses_root"
			if err := st.CreateSession(ctx, session.Session{ID: root, Status: session.StatusRunning}); err != nil {
				b.Fatal(err)
			}
			kids := make([]string, producers)
			for i := range kids {
				kids[i] = fmt.Sprintf("ses_kid%d", i)
				if err := st.CreateSession(ctx, session.Session{ID: kids[i], ParentID: root, Depth: 1, Status: session.StatusRunning}); err != nil {
					b.Fatal(err)
				}
			}
			p := record.New(st, nil)
			proj := sessiontree.NewProjection(st, nil)
			defer proj.Subscribe(func(string, []sessiontree.Change) {})()
			defer p.Watch(proj)()
			var mu sync.Mutex
			var buf []byte
			sink := event.SinkFunc(func(e event.Event) {
				mu.Lock()
				defer mu.Unlock()
				buf, _ = event.AppendJSON(buf[:0], e)
			})
			r := p.Open(ctx, root, sink)
			r.Emit(event.RunStarted{SessionID: root, RunID: "run_1"})
			evs := make([][]event.Event, producers)
			for i, kid := range kids {
				w := func(e event.Event) event.Event {
					return event.Subagent{SourceName: "w", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: kid,
						ParentSessionID: root, Path: []string{kid}, Event: e}
				}
				r.Emit(event.SpawnSessionStart{ChildSessionID: kid, ParentSessionID: root, SourceName: "w", SourceType: event.SourceAgent, Depth: 1})
				r.Emit(w(event.RunStarted{SessionID: kid, RunID: "run_k"}))
				r.Emit(w(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}}))
				evs[i] = []event.Event{w(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "token "}})}
			}
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range producers {
				wg.Go(func() {
					for range b.N {
						r.Emit(evs[i][0])
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if s, ok := any(r).(interface{ Sync() }); ok {
				s.Sync()
			}
			for _, kid := range kids {
				_ = st.DeleteSession(ctx, kid)
			}
		})
	}
}
