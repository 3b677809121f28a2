package processor

import (
	"context"

	"github.com/agentpool/agentpool/event"
)

// Stream records the events of one root run (the stream owned by one root
// session), as Record(ctx, owner, e) does for each, in the order of its
// calls. The caller serializes the calls, as it must for Record; the pool's
// recorder opens one Stream per run under its lock.
//
// What a Stream adds: once the run is known to be lean, the Stream keeps
// the run's lean state and records each event with no lock of the
// processor's and no lookup (the state belongs to this stream alone).
// Every other event goes through Record's path.
type Stream struct {
	p     *Processor
	owner string
	lean  *leanRun // the run's lean state, while gen matches
	gen   uint64
}

// Stream opens the recording of the root run owned by owner.
func (p *Processor) Stream(owner string) *Stream { return &Stream{p: p, owner: owner} }

// Record records one event of the stream (see Processor.Record).
func (s *Stream) Record(ctx context.Context, e event.Event) {
	if e == nil {
		return
	}
	if lr := s.lean; lr != nil && lr.gen.Load() == s.gen {
		if s.p.record(ctx, s.owner, lr, e, false) == nil {
			s.lean = nil // the run ended
		}
		return
	}
	_, lr := s.p.apply(ctx, s.owner, e, false)
	s.lean = lr
	if lr != nil {
		// Read after apply released p.mu; the state can only be released
		// by this stream's own later events (or an Apply on the owner,
		// which the caller's serialization rules out).
		s.gen = lr.gen.Load()
	}
}
