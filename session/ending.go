package session

import (
	"fmt"
	"time"

	"github.com/agentpool/agentpool/event"
)

// How a child session ends, and the record of a child the store lacks,
// as the recorder (package record) writes them to the store and the
// projection (package sessiontree) shows them: one definition, so that
// both make the same record.

// Ending is how a session's run ended.
type Ending struct {
	Stop       event.StopReason
	Err        string
	Output     string // the last assistant message, when known
	Usage      *event.Usage
	Cost       float64
	DurationMS int64
	// Final: the values are the session's final totals (those of a
	// spawn_session_end).
	Final bool
}

// EndingOf is the end a spawn_session_end reports, its stop reason
// settled.
func EndingOf(ev event.SpawnSessionEnd) Ending {
	e := Ending{Stop: ev.StopReason, Err: ev.Error, Output: ev.LastAssistantMessage, Usage: ev.Usage,
		Cost: ev.Cost, DurationMS: ev.DurationMS, Final: true}
	e.Settle()
	return e
}

// Settle gives an end without a stop reason its own: completed, or error
// when it carries an error.
func (e *Ending) Settle() {
	if e.Stop == "" {
		e.Stop = event.StopCompleted
		if e.Err != "" {
			e.Stop = event.StopError
		}
	}
}

// ErrParentEnded is the error of a child ended because its parent ended
// first.
const ErrParentEnded = "parent session ended first"

// ParentEnded is the end of a child ended because its parent ended first.
func ParentEnded() Ending { return Ending{Stop: event.StopAborted, Err: ErrParentEnded} }

// ChildRecord is the record of a child that is not in the store, as
// spawn.Spawn would have written it, from what its start says (the child,
// its parent, source, depth and description; a reactive fallback knows
// fewer of them).
func ChildRecord(start event.SpawnSessionStart, now time.Time) Session {
	title := start.Description
	if title == "" {
		title = start.SourceName
	}
	return Session{
		ID: start.ChildSessionID, ParentID: start.ParentSessionID, Depth: start.Depth, AgentName: start.SourceName,
		SourceType: start.SourceType, Title: fmt.Sprintf("%s (@%s subagent)", title, start.SourceName),
		Status: StatusRunning, CreatedAt: now, UpdatedAt: now,
	}
}
