package sessiontree

import (
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// How sessions end in the projection: a root with its own stream_complete
// or run_error, a child with its spawn_session_end (or its parent's end).

func (a *applier) streamComplete(s *sess, ev event.StreamComplete) {
	m := a.ensureMessage(s)
	m.info.Usage, m.info.Cost, m.info.Finish = ev.Message.Usage, ev.Message.Cost, ev.Message.FinishReason
	if ev.Message.Model != "" {
		m.info.ModelID = ev.Message.Model
	}
	a.closeMessage(s, "")
	if s.parent == nil {
		a.finish(s, session.Ending{Stop: event.StopCompleted, Output: ev.Message.Content})
		a.release(s)
	}
}

func (a *applier) runError(s *sess, ev event.RunError) {
	a.ensureMessage(s)
	a.closeMessage(s, ev.Message)
	if !s.errored {
		s.errored = true
		if a.want {
			a.emit(SessionError{SessionID: s.rec.ID, Code: ev.Code, Message: ev.Message})
		}
	}
	if s.parent == nil {
		stop := event.StopError
		switch ev.Code {
		case string(event.StopAborted):
			stop = event.StopAborted
		case string(event.StopBudget):
			stop = event.StopBudget
		}
		a.finish(s, session.Ending{Stop: stop, Err: ev.Message})
		a.release(s)
	}
}

// finish ends a session: its open children, tool parts and message, its
// record, and the part in its parent that points at it.
func (a *applier) finish(s *sess, f session.Ending) {
	f.Settle()
	for _, k := range s.kids {
		if !k.ended {
			a.finish(k, session.ParentEnded())
		}
	}
	s.ended = true
	for callID, pt := range s.tools {
		if pt.open() {
			pt.State.Status, pt.State.Error, pt.State.End = ToolError, "session ended before the tool call completed", a.clock()
			if a.want {
				a.emit(PartUpdated{Part: pt.snapshot()})
			}
		}
		delete(s.tools, callID)
	}
	if s.msg != nil {
		errText := ""
		if f.Stop != event.StopCompleted {
			errText = f.Err
			if errText == "" {
				errText = string(f.Stop)
			}
		}
		a.closeMessage(s, errText)
	}

	s.rec.Status = session.StatusFromStop(f.Stop)
	s.rec.StopReason = f.Stop
	if f.Final {
		if f.Usage != nil {
			s.rec.TotalUsage = *f.Usage
		}
		s.rec.TotalCost = f.Cost
		s.rec.DurationMS = f.DurationMS
	}
	if f.Err != "" {
		if s.rec.Metadata == nil {
			s.rec.Metadata = map[string]any{}
		}
		s.rec.Metadata["error"] = f.Err
	}
	s.rec.UpdatedAt = a.clock()
	if a.want {
		a.emit(SessionUpdated{Info: s.info()})
	}
	if f.Stop == event.StopError && !s.errored {
		s.errored = true
		msg := f.Err
		if msg == "" {
			msg = string(f.Stop)
		}
		if a.want {
			a.emit(SessionError{SessionID: s.rec.ID, Code: string(f.Stop), Message: msg})
		}
	}
	if a.want {
		a.emit(SessionIdle{SessionID: s.rec.ID})
	}

	if l := s.link; l != nil && l.open() {
		if f.Stop == event.StopCompleted || f.Stop == event.StopMaxTokens || f.Stop == event.StopRefusal {
			l.State.Status, l.State.Output = ToolCompleted, f.Output
		} else {
			msg := f.Err
			if msg == "" {
				msg = string(f.Stop)
			}
			l.State.Status, l.State.Error = ToolError, msg
		}
		l.State.End = a.clock()
		l.State.Metadata["stopReason"] = string(f.Stop)
		if l.CallID == "spawn:"+s.rec.ID && s.parent != nil {
			delete(s.parent.tools, l.CallID)
		}
		if a.want {
			a.emit(PartUpdated{Part: l.snapshot()})
		}
	}
	if s.parent != nil {
		delete(s.parent.kids, s.rec.ID)
	}
}
