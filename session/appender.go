package session

import (
	"context"

	"github.com/agentpool/agentpool/event"
)

// EventLogs is implemented by a store that can find a session's event log
// once and then append to it without looking the session up again: the
// recorder of a run appends every event of its sessions (one per model
// token), and asks for each session's log once per run. With a store that
// does not implement it, AppendEvents answers every append. A wrapper
// store must not forward it (its own AppendEvents would be bypassed).
type EventLogs interface {
	// EventLog returns the log of session id for the writes made with
	// ctx (a run's: its account of writes, TrackWrites, is found once),
	// or ErrNotFound (ErrClosed) when the store has no such session (is
	// closed).
	EventLog(ctx context.Context, id string) (EventLog, error)
}

// EventLog appends to the event log of one session with the context it
// was found with (EventLogs).
type EventLog interface {
	// AppendEvents is the store's AppendEvents for the log's session and
	// context, with the same rules and errors; ErrNotFound once the
	// session was deleted or dropped from the store, even when a session
	// of the same id was created since (ask EventLogs again then).
	AppendEvents(evs ...event.Event) error
}
