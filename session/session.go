package session

import (
	"context"
	"errors"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
)

// Status of a session.
type Status string

// Statuses (docs/spec/EVENTS.md §1).
const (
	StatusRunning     Status = "running"
	StatusIdle        Status = "idle"
	StatusCompleted   Status = "completed"
	StatusAborted     Status = "aborted"
	StatusError       Status = "error"
	StatusInterrupted Status = "interrupted"
)

// StatusFromStop maps a spawn stop reason to the final status of a session.
func StatusFromStop(stopReason event.StopReason) Status {
	switch stopReason {
	case event.StopCompleted, event.StopMaxTokens, event.StopRefusal:
		return StatusCompleted
	case event.StopAborted:
		return StatusAborted
	case event.StopInterrupted:
		return StatusInterrupted
	default:
		return StatusError
	}
}

// Errors.
var (
	ErrNotFound = errors.New("session not found")
	ErrExists   = errors.New("session already exists")
	// ErrClosed is returned by every call on a closed store (Close itself
	// excepted: closing twice is a no-op).
	ErrClosed = errors.New("session store closed")
)

// MetaEngine is the Metadata key of a session that a durable execution
// engine runs (its value names the engine: "temporal"). The engine, not a
// process, owns such a run: a store's recovery of what a dead process
// left running leaves the session alone, since the engine goes on running
// it on another worker.
const MetaEngine = "engine"

// MetaThread is the Metadata key under which a front end records its own
// name for a root session, when that name is not a session id: the
// AG-UI server's threadId (a client's UUID). Its string value is what
// ListOptions.Thread finds, and every store indexes it, so that finding a
// thread's session costs the same however many sessions are stored.
const MetaThread = "agui_thread_id"

// Session is the record of one session.
type Session struct {
	ID         string           `json:"id"`
	ParentID   string           `json:"parent_id,omitempty"`
	Depth      int              `json:"depth"`
	AgentName  string           `json:"agent_name"`
	SourceType event.SourceType `json:"source_type"`
	Title      string           `json:"title"`
	Status     Status           `json:"status"`
	StopReason event.StopReason `json:"stop_reason,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
	UpdatedAt  time.Time        `json:"updated_at"`
	Usage      event.Usage      `json:"usage"`                 // this session's own model usage
	Cost       float64          `json:"cost"`                  // this session's own cost (USD)
	TotalUsage event.Usage      `json:"total_usage"`           // own plus every descendant's
	TotalCost  float64          `json:"total_cost"`            // own plus every descendant's
	DurationMS int64            `json:"duration_ms,omitempty"` // of the last run
	Metadata   map[string]any   `json:"metadata,omitempty"`
}

// Message is a stored conversation message.
type Message struct {
	ID        string    `json:"id"`
	SessionID string    `json:"session_id"`
	AgentName string    `json:"agent_name,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	model.Message
}

// Record is one stored event.
type Record struct {
	SessionID string      `json:"session_id"`
	Seq       int64       `json:"seq"`        // 1-based, per session
	GlobalSeq int64       `json:"global_seq"` // store-wide order
	Time      time.Time   `json:"time"`
	Event     event.Event `json:"-"`
}

// ListOptions filters ListSessions.
type ListOptions struct {
	RootsOnly bool   // only sessions without a parent
	ParentID  string // only children of this session
	Limit     int    // 0 = no limit
	// Thread, when set, keeps only the sessions whose Metadata[MetaThread]
	// is this string. Stores answer it from an index: its cost is that of
	// the sessions found, not of the sessions stored.
	Thread string
}

// Store persists sessions, messages and event logs.
//
// Lost writes: a store accounts for every write (CreateSession,
// UpdateSession, DeleteSession, AppendMessages, AppendEvents, Release)
// made with a context of TrackWrites that it does not keep, whether the
// call returned the error or answered before the write was durable
// (RunWrites.Lost, through ReportWrite), and once the run of that
// context has lost a write it refuses the run's later writes but Release
// (CheckWrite): the run's stored writes are a prefix of what it wrote.
type Store interface {
	// CreateSession stores a new session. ErrExists if the id is taken;
	// ErrNotFound if ParentID names no session.
	CreateSession(ctx context.Context, s Session) error
	// GetSession returns a copy of a session, or ErrNotFound.
	GetSession(ctx context.Context, id string) (Session, error)
	// UpdateSession applies fn to the stored session atomically. fn must
	// not change ID, ParentID or Depth (they are restored if it does), and
	// must not keep s after it returns (a store may hand it its own record).
	UpdateSession(ctx context.Context, id string, fn func(*Session)) error
	// ListSessions returns sessions newest first.
	ListSessions(ctx context.Context, opts ListOptions) ([]Session, error)
	// DeleteSession deletes a session with its whole subtree, messages and
	// events. ErrNotFound if it does not exist.
	DeleteSession(ctx context.Context, id string) error
	// AppendMessages adds messages to a session's conversation.
	AppendMessages(ctx context.Context, sessionID string, msgs ...Message) error
	// Messages returns a session's conversation in order.
	Messages(ctx context.Context, sessionID string) ([]Message, error)
	// AppendEvents adds events to a session's log, in order.
	AppendEvents(ctx context.Context, sessionID string, evs ...event.Event) error
	// Events returns a session's log with Seq > afterSeq, in order.
	Events(ctx context.Context, sessionID string, afterSeq int64) ([]Record, error)
	// Claim makes the calling process the one that runs sessionID, until
	// Release. It fails with a *RunningError (errors.Is ErrRunning) while
	// a live owner (this store, another store on the same database, another
	// process) holds a claim on sessionID, on one of its ancestors or on
	// one of its descendants: one run at a time in a line of sessions. The
	// check and the claim are one atomic step. A claim whose owner is gone
	// (its process died) does not count: it is taken over. The session need
	// not exist yet (a run claims the id of the session it is about to
	// create).
	Claim(ctx context.Context, sessionID string) error
	// Release ends this store's claim on sessionID once every write
	// accepted before the call is durable, so that the next owner sees what
	// the run wrote. Releasing a session this store does not hold is a
	// no-op. The claim ends even when the release cannot be made durable
	// (the error says so): this store's claims no longer see it, and the
	// store drops it from the database with a later write or its Close,
	// so that a run whose writes failed does not hold its session for as
	// long as the process lives.
	Release(ctx context.Context, sessionID string) error
	// Flush makes every write accepted so far durable.
	Flush(ctx context.Context) error
	// Close flushes and releases the store.
	Close() error
}

// Subtree returns the session and all of its descendants, parents before
// children, using only the Store interface.
func Subtree(ctx context.Context, st Store, rootID string) ([]Session, error) {
	root, err := st.GetSession(ctx, rootID)
	if err != nil {
		return nil, err
	}
	out := []Session{root}
	for i := 0; i < len(out); i++ {
		kids, err := st.ListSessions(ctx, ListOptions{ParentID: out[i].ID})
		if err != nil {
			return nil, err
		}
		// ListSessions is newest first; keep creation order for display.
		for k := len(kids) - 1; k >= 0; k-- {
			out = append(out, kids[k])
		}
	}
	return out, nil
}

// CloneMetadata returns a deep copy of m: nested maps and slices (as JSON
// decoding produces them) are copied too, so that a store's copy and its
// caller's never share anything. Other values are copied as they are.
func CloneMetadata(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return CloneMetadata(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cloneValue(x)
		}
		return out
	case []string:
		return append([]string(nil), v...)
	case []byte:
		return append([]byte(nil), v...)
	}
	return v
}
