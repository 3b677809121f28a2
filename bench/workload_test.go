package bench

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// These tests check that each workload does the work its benchmark claims
// (complete streams that keep the event invariants, children stored), so
// that a figure never comes from a run that silently failed.

func poolReq(prompt string) pool.RunRequest { return pool.RunRequest{Prompt: prompt} }

// tee passes each event to both sinks.
type tee struct{ a, b event.Sink }

func (t tee) Emit(e event.Event) { t.a.Emit(e); t.b.Emit(e) }

func TestDelegatedWorkload(t *testing.T) {
	st := memory.New()
	d, err := NewDelegated(st)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sink, got := eventtest.Collect()
	res, err := d.Pool.RunSink(ctx, poolReq("Delegate the work."), tee{&d.Sink, sink})
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.Output != "finished" {
		t.Fatalf("output %q", res.Result.Output)
	}
	evs := got()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Fatal(err)
	}
	var starts, ends, wrapped int
	var childID string
	for _, e := range evs {
		switch v := e.(type) {
		case event.SpawnSessionStart:
			starts++
			childID = v.ChildSessionID
			if v.SpawnMechanism != event.MechanismWorker {
				t.Errorf("mechanism %q", v.SpawnMechanism)
			}
		case event.SpawnSessionEnd:
			ends++
			if v.StopReason != event.StopCompleted || v.LastAssistantMessage != "done" {
				t.Errorf("end %+v", v)
			}
		case event.Subagent:
			wrapped++
		}
	}
	if starts != 1 || ends != 1 || wrapped == 0 || d.Sink.N != len(evs) {
		t.Fatalf("starts %d ends %d wrapped %d counted %d of %d", starts, ends, wrapped, d.Sink.N, len(evs))
	}
	child, err := st.GetSession(ctx, childID)
	if err != nil {
		t.Fatal(err)
	}
	if child.ParentID != res.SessionID || child.Status != session.StatusCompleted {
		t.Fatalf("child %+v", child)
	}
	if recs, err := st.Events(ctx, childID, 0); err != nil || len(recs) != wrapped {
		t.Fatalf("child events stored %d (%v), want %d", len(recs), err, wrapped)
	}
	if msgs, err := st.Messages(ctx, childID); err != nil || len(msgs) != 2 {
		t.Fatalf("child messages %d (%v), want 2", len(msgs), err)
	}
	t.Logf("delegated call: %d events (%d wrapped)", len(evs), wrapped)
}

func TestPipelineWorkloads(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		depth int
		mode  ProcessorMode
	}{{1, NoProcessor}, {3, NoProcessor}, {1, Lean}, {1, Projected}} {
		depth := tc.depth
		var c Counter
		var changes atomic.Int64
		p, err := NewBarePipeline(10, depth, &c, tc.mode, &changes)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(ctx); err != nil {
			t.Fatal(err)
		}
		if got := changes.Load(); (tc.mode == Projected) != (got > 0) {
			t.Fatalf("mode %d: %d changes delivered", tc.mode, got)
		}
		// start + wrapped events + end at the root; per relay level one
		// more start/end pair and run_started/stream_complete, all wrapped.
		wantWrapped := 12 + 4*(depth-1)
		if c.Wrapped != wantWrapped || c.N != wantWrapped+2 {
			t.Fatalf("depth %d: wrapped %d of %d, want %d of %d", depth, c.Wrapped, c.N, wantWrapped, wantWrapped+2)
		}
	}

	sink, got := eventtest.Collect()
	var c Counter
	p, err := NewPoolPipeline(nil, 10, tee{&c, sink})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Pool.RunSink(ctx, poolReq("emit"), p.Sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := eventtest.CheckInvariants(res.SessionID, got()); err != nil {
		t.Fatal(err)
	}
	if c.Wrapped != 12 {
		t.Fatalf("wrapped %d, want 12", c.Wrapped)
	}
}

func TestTeamAndChainWorkloads(t *testing.T) {
	ctx := context.Background()
	p, err := NewPool("team.yaml", TeamYAML(50), nil)
	if err != nil {
		t.Fatal(err)
	}
	sink, got := eventtest.Collect()
	sid, err := RunNode(ctx, p, "crew", sink)
	if err != nil {
		t.Fatal(err)
	}
	evs := got()
	if err := eventtest.CheckInvariants(sid, evs); err != nil {
		t.Fatal(err)
	}
	kids, err := p.Store().ListSessions(ctx, session.ListOptions{ParentID: sid})
	if err != nil || len(kids) != 50 {
		t.Fatalf("team children %d (%v)", len(kids), err)
	}

	for depth := 1; depth <= 5; depth++ {
		p, err := NewPool("chain.yaml", ChainYAML(depth), nil)
		if err != nil {
			t.Fatal(err)
		}
		sink, got := eventtest.Collect()
		sid, err := RunNode(ctx, p, "a0", sink)
		if err != nil {
			t.Fatal(err)
		}
		evs := got()
		if err := eventtest.CheckInvariants(sid, evs); err != nil {
			t.Fatal(err)
		}
		deepest := 0
		for _, e := range evs {
			if s, ok := e.(event.SpawnSessionStart); ok {
				deepest = max(deepest, s.Depth)
			}
			if s, ok := e.(event.Subagent); ok {
				if st, ok := s.Event.(event.SpawnSessionStart); ok {
					deepest = max(deepest, st.Depth)
				}
			}
		}
		if deepest != depth {
			t.Fatalf("chain %d reached depth %d", depth, deepest)
		}
	}
}

func TestLatencyWorkload(t *testing.T) {
	l, err := NewLatency(nil, 20, 5)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := l.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	ps, n := l.Percentiles(50, 99)
	if n != 200 || ps[0] <= 0 || ps[1] < ps[0] {
		t.Fatalf("samples %d p50 %v p99 %v", n, ps[0], ps[1])
	}
}

func TestHeapPeak(t *testing.T) {
	h := StartHeapPeak(1e6)
	buf := make([]byte, 8<<20)
	buf[len(buf)-1] = 1
	if peak := h.Stop(); peak < 8<<20 {
		t.Fatalf("peak %d below a live 8 MiB buffer", peak)
	}
	_ = buf[len(buf)-1]
}
