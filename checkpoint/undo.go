package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/session"
)

// Undo takes back the last rewind of sessionID that was not undone: the
// files it restored are put back as they were just before it (captured
// by the rewind), and the messages it cut are put back from its fork
// (with new ids), which needs the conversation not to have gone on since.
// The rewind's record is marked undone; its fork stays.
func Undo(ctx context.Context, st session.Store, sessionID string) (Result, error) {
	res := Result{Session: sessionID, Files: []File{}}
	cs, err := captures(st)
	if err != nil {
		return res, err
	}
	release, err := claim(ctx, st, sessionID)
	if err != nil {
		return res, err
	}
	err = undo(ctx, st, cs, &res)
	return res, errors.Join(err, release())
}

func undo(ctx context.Context, st session.Store, cs session.CaptureStore, res *Result) error {
	s, err := st.GetSession(ctx, res.Session)
	if err != nil {
		return err
	}
	list, _ := s.Metadata[MetaRewind].([]any)
	last := -1
	for i, e := range list {
		if m, _ := e.(map[string]any); m != nil && m["undone"] == nil {
			last = i
		}
	}
	if last < 0 {
		return fmt.Errorf("session %s has no rewind to undo", res.Session)
	}
	entry := list[last].(map[string]any)
	res.To, _ = entry["to"].(string)
	mode, _ := entry["mode"].(string)
	res.Mode = Mode(mode)
	fork, _ := entry["fork"].(string)
	res.Fork = fork
	var back []session.Message
	if fork != "" {
		kept, total := number(entry["kept"]), number(entry["total"])
		msgs, err := st.Messages(ctx, res.Session)
		if err != nil {
			return err
		}
		if len(msgs) != kept {
			return fmt.Errorf("session %s has gone on since its rewind (%d messages, %d then): its conversation cannot be put back; the conversation before the rewind is session %s",
				res.Session, len(msgs), kept, fork)
		}
		orig, err := st.Messages(ctx, fork)
		if err != nil {
			return err
		}
		if total > len(orig) || kept > total {
			return fmt.Errorf("the fork %s of the rewind holds %d messages, fewer than the %d cut", fork, len(orig), total)
		}
		now := time.Now()
		for _, m := range orig[kept:total] {
			m.ID, m.SessionID = id.AscendingAt(id.Message, now), res.Session
			back = append(back, m)
		}
	}
	if key, _ := entry["undo"].(string); key != "" {
		all, err := cs.Captures(ctx, res.Session)
		if err != nil {
			return err
		}
		caps := slices.DeleteFunc(all, func(c session.Capture) bool { return c.ToolCallID != key || c.MessageID != "" })
		res.Files = restoreAll(caps, nil)
	}
	if len(back) > 0 {
		if err := st.AppendMessages(ctx, res.Session, back...); err != nil {
			return err
		}
		res.PutBack = len(back)
	}
	var restoreErr error
	for _, f := range res.Files {
		if f.Err != "" {
			restoreErr = ErrRestore
		}
	}
	err = st.UpdateSession(ctx, res.Session, func(s *session.Session) {
		l, _ := s.Metadata[MetaRewind].([]any)
		if last < len(l) {
			l = slices.Clone(l)
			m := session.CloneMetadata(l[last].(map[string]any))
			m["undone"] = time.Now().UTC().Format(time.RFC3339)
			l[last] = m
			s.Metadata[MetaRewind] = l
		}
		s.UpdatedAt = time.Now()
	})
	return errors.Join(restoreErr, err, st.Flush(ctx))
}

// number is a count kept in metadata: an int in memory, a float64 once
// it went through JSON.
func number(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	case int64:
		return int(n)
	}
	return -1
}
