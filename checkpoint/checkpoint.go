package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// MetaFork is the Metadata key of a forked session: a map with "from"
// (the session it was forked from), "at" (the message before which it
// was cut, "" for the whole conversation) and "reason" ("fork", or
// "rewind" for the copy a rewind keeps of the original).
const MetaFork = "forked_from"

// MetaRewind is the Metadata key of a session that was rewound: a list of
// maps with "to" (the message it was taken back to), "mode", "fork" (the
// session that keeps the conversation as it was, when cut) and "at" (the
// time, RFC 3339).
const MetaRewind = "rewinds"

// Mode is what a rewind takes back.
type Mode string

// Modes.
const (
	Code         Mode = "code"         // the files only
	Conversation Mode = "conversation" // the conversation only
	Both         Mode = "both"
)

// captures is st as a CaptureStore, or the error that says it is not.
func captures(st session.Store) (session.CaptureStore, error) {
	cs, ok := session.CaptureStoreOf(st)
	if !ok {
		return nil, fmt.Errorf("the session store (%T) keeps no checkpoints", st)
	}
	return cs, nil
}

// claim claims sid for the duration of an operation.
func claim(ctx context.Context, st session.Store, sid string) (func() error, error) {
	if err := st.Claim(ctx, sid); err != nil {
		if errors.Is(err, session.ErrRunning) {
			return nil, fmt.Errorf("session %s is running: %w", sid, err)
		}
		return nil, err
	}
	return func() error { return st.Release(context.WithoutCancel(ctx), sid) }, nil
}

// messageIndex is the position of message mid in msgs, or an error that
// names the session's messages.
func messageIndex(msgs []session.Message, sid, mid string) (int, error) {
	if i := slices.IndexFunc(msgs, func(m session.Message) bool { return m.ID == mid }); i >= 0 {
		return i, nil
	}
	return -1, fmt.Errorf("%w: message %s is not in the conversation of session %s (%d messages; `agentpool sessions show %s` lists their ids)",
		session.ErrNotFound, mid, sid, len(msgs), sid)
}

// Fork copies the conversation of sessionID, the messages before
// atMessage (all of them when atMessage is ""), into a new root session
// that goes on independently, with the captures of the copied messages
// (so that the fork can be rewound in turn). The new session is idle, of
// the same agent, and its metadata names its origin (MetaFork).
func Fork(ctx context.Context, st session.Store, sessionID, atMessage string) (session.Session, error) {
	cs, err := captures(st)
	if err != nil {
		return session.Session{}, err
	}
	release, err := claim(ctx, st, sessionID)
	if err != nil {
		return session.Session{}, err
	}
	// What the session's background shells changed so far is copied too.
	if err := finishShells(ctx, st, []string{sessionID}); err != nil {
		return session.Session{}, errors.Join(err, release())
	}
	f, err := fork(ctx, st, cs, sessionID, atMessage, "fork")
	return f, errors.Join(err, release())
}

func fork(ctx context.Context, st session.Store, cs session.CaptureStore, sessionID, atMessage, reason string) (session.Session, error) {
	src, err := st.GetSession(ctx, sessionID)
	if err != nil {
		return session.Session{}, err
	}
	msgs, err := st.Messages(ctx, sessionID)
	if err != nil {
		return session.Session{}, err
	}
	if atMessage != "" {
		i, err := messageIndex(msgs, sessionID, atMessage)
		if err != nil {
			return session.Session{}, err
		}
		msgs = msgs[:i]
	}
	now := time.Now()
	meta := session.CloneMetadata(src.Metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	delete(meta, session.MetaThread) // a front end's thread names its own session
	delete(meta, MetaRewind)
	meta[MetaFork] = map[string]any{"from": sessionID, "at": atMessage, "reason": reason}
	f := session.Session{
		ID: id.DescendingAt(id.Session, now), AgentName: src.AgentName, SourceType: src.SourceType,
		Title: src.Title, Status: session.StatusIdle, CreatedAt: now, UpdatedAt: now, Metadata: meta,
	}
	if f.SourceType == "" || src.ParentID != "" {
		f.SourceType = event.SourceAgent // a forked child is a root of its own
	}
	// New message ids: a message id names one message of one session.
	ids := make(map[string]string, len(msgs))
	copied := make([]session.Message, len(msgs))
	for i, m := range msgs {
		ids[m.ID] = id.AscendingAt(id.Message, now)
		m.ID, m.SessionID = ids[m.ID], f.ID
		copied[i] = m
	}
	if c, ok := meta[session.MetaCompaction].(map[string]any); ok {
		if first, _ := c["first_kept_message_id"].(string); ids[first] != "" {
			c["first_kept_message_id"] = ids[first]
		} else {
			delete(meta, session.MetaCompaction) // cut before what was kept: the whole copy is the history
		}
	}
	if err := st.CreateSession(ctx, f); err != nil {
		return session.Session{}, err
	}
	if err := st.AppendMessages(ctx, f.ID, copied...); err != nil {
		return f, err
	}
	caps, err := cs.Captures(ctx, sessionID)
	if err != nil {
		return f, err
	}
	calls := callMessages(msgs)
	for _, c := range caps {
		mid := c.MessageID
		if mid == "" {
			mid = calls[c.ToolCallID]
		}
		if ids[mid] == "" {
			continue // taken at a message the fork does not have
		}
		c.SessionID, c.MessageID = f.ID, ids[mid]
		if _, err := cs.PutCapture(ctx, c); err != nil {
			return f, err
		}
	}
	return f, st.Flush(ctx)
}

// callMessages maps each tool call of msgs to the message that holds it.
func callMessages(msgs []session.Message) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Kind == model.PartToolCall && p.ToolCallID != "" {
				out[p.ToolCallID] = m.ID
			}
		}
	}
	return out
}
