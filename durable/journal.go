package durable

import (
	"context"
	"encoding/json"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// journal is a session's sink and conversation store inside its workflow:
// it keeps what the workflow code emits and stores until the next activity
// writes it (take). It is deterministic state of the workflow: a replay
// rebuilds it as it was.
type journal struct {
	sid    string
	seq    int64 // events in the session's log once what was taken is written
	events []json.RawMessage
	msgs   []session.Message
	ends   []EndInput // children's ends, written before the events (Pending.Ends)
	check  bool       // the last write failed: the next one looks first
	// A run continued as new runs its team's code from its start: what
	// that code emitted in an earlier run is dropped, the run's start and
	// its first skipRefused spawn_refused events (carry.go). refused
	// counts the spawn_refused events emitted, dropped ones included.
	skipStarted          bool
	skipRefused, refused int
}

// Emit implements event.Sink. A result's text is bounded (boundEvent):
// the events go to the store through an activity's input.
func (j *journal) Emit(e event.Event) {
	switch x := e.(type) {
	case event.RunStarted:
		if j.skipStarted {
			j.skipStarted = false
			return
		}
	case event.Custom:
		if x.EventType == spawn.EventSpawnRefused {
			j.refused++
			if j.refused <= j.skipRefused {
				return
			}
		}
	}
	j.events = append(j.events, encode(boundEvent(e)))
}

// endChild journals the end of a child whose workflow returned it, for
// the next write (Pending.Ends). What the End activity does not read of
// its output (the answer, the conversation) is left out: it goes through
// the write's input.
func (j *journal) endChild(e EndInput) {
	e.Output.Output, e.Output.Messages = "", nil
	j.ends = append(j.ends, e)
}

// pending reports whether anything waits to be written.
func (j *journal) pending() bool { return len(j.events) > 0 || len(j.msgs) > 0 || len(j.ends) > 0 }

// take returns what is pending, from the log's known length.
func (j *journal) take() Pending {
	p := Pending{SessionID: j.sid, AfterSeq: j.seq, Events: j.events, Messages: j.msgs, Ends: j.ends, Check: j.check}
	j.events, j.msgs, j.ends, j.check = nil, nil, nil, false
	return p
}

// pendingBytes is the size of the events pending, the children's ends'
// among them.
func (j *journal) pendingBytes() int {
	n := 0
	for _, e := range j.events {
		n += len(e)
	}
	for _, e := range j.ends {
		n += endBytes(e)
	}
	return n
}

// endBytes is the size of a child's end's events.
func endBytes(e EndInput) int {
	n := 0
	for _, ev := range e.Pending.Events {
		n += len(ev)
	}
	return n
}

// takeUpTo returns the oldest children's ends, then the oldest pending
// events, at most limit bytes in all (at least one end or event),
// without the messages: a part of what take would return, for a write
// of its own (wfEnv.spill). Events are taken only once every end is:
// each end precedes the events that were journaled after it.
func (j *journal) takeUpTo(limit int) Pending {
	e, k, n := 0, 0, 0
	for e < len(j.ends) && (e == 0 || n+endBytes(j.ends[e]) <= limit) {
		n += endBytes(j.ends[e])
		e++
	}
	if e == len(j.ends) {
		for k < len(j.events) && (e+k == 0 || n+len(j.events[k]) <= limit) {
			n += len(j.events[k])
			k++
		}
	}
	p := Pending{SessionID: j.sid, AfterSeq: j.seq, Events: j.events[:k:k], Ends: j.ends[:e:e], Check: j.check}
	j.events, j.ends, j.check = j.events[k:], j.ends[e:], false
	return p
}

// written records that p was written and the log has n events more
// beyond it.
func (j *journal) written(p Pending, n int64) {
	// max: a branch's call that carried nothing may end after another
	// branch wrote (the log only grows).
	j.seq = max(j.seq, p.AfterSeq+int64(len(p.Events))+n)
}

// failed gives p back: the activity that carried it failed, having written
// some, all or none of it; the next write looks before writing.
func (j *journal) failed(p Pending) {
	j.events = append(p.Events, j.events...)
	j.msgs = append(p.Messages, j.msgs...)
	j.ends = append(p.Ends, j.ends...)
	j.check = true
}

// store is the session.Store the workflow's runtime has: appends of
// messages are journaled; nothing else is called under a durable engine
// (children are created by Env.Spawn's activity).
type journalStore struct {
	session.Store // nil: any other call is a bug, and panics
	j             *journal
}

func (s journalStore) AppendMessages(_ context.Context, sessionID string, msgs ...session.Message) error {
	if sessionID != s.j.sid {
		panic("durable: append to another session's conversation: " + sessionID)
	}
	s.j.msgs = append(s.j.msgs, msgs...)
	return nil
}
