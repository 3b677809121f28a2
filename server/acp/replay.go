package acp

import (
	"context"
	"github.com/agentpool/agentpool/spawn"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
)

// replay sends the stored history of a session as session/update
// notifications. The event logs of the session and of its whole subtree are
// merged in store order and wrapped the way the live root stream had them,
// so that the client sees what it saw live (spawn tool calls included); the
// user prompts come from the stored messages. A session without an event
// log is replayed from its messages alone. With openRun, the replay stops
// at the start of that run of the root (after its prompt): the run goes on
// here (continueRun), and its stored events reach the editor through the
// converter of the run, which must know them to show its requests.
func (c *conn) replay(sid, openRun string) error {
	ctx := context.WithoutCancel(c.ctx)
	store := c.s.pool.Store()
	recs, err := session.ReplayTree(ctx, store, sid)
	if err != nil {
		return err
	}
	msgs, err := store.Messages(ctx, sid)
	if err != nil {
		return err
	}
	c.mu.Lock()
	view := c.view
	c.mu.Unlock()
	if len(recs) == 0 {
		replayMessages(sid, msgs, c.updater(sid))
		return nil
	}
	conv := newConverter(sid, view, c.updater(sid), c.log)
	conv.noTerminals = true // released long ago: the results' text stays
	c.mu.Lock()
	s := c.sessions[sid]
	c.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		conv.relocate = relocator(s.ws, c.s.pool.Workspace())
		s.mu.Unlock()
	}
	replayEvents(conv, recs, msgs, openRun)
	return nil
}

// replayEvents feeds records merged in store order through conv (made for
// the root session), each root run preceded by its user prompt, up to the
// root's run openRun (its prompt included) when it is not "".
func replayEvents(conv *converter, recs []session.Replayed, msgs []session.Message, openRun string) {
	root, send := conv.root, conv.send
	prompts := userPrompts(msgs)
	// Start times of the root's runs, to give each run its prompt.
	var starts []time.Time
	for _, r := range recs {
		if _, ok := r.Event.(event.RunStarted); ok && r.Record.SessionID == root {
			starts = append(starts, r.Record.Time)
		}
	}
	run, next := 0, 0
	lastStop := event.StopCompleted
records:
	for _, r := range recs {
		if r.Record.SessionID == root {
			if rs, ok := r.Event.(event.RunStarted); ok {
				var end time.Time
				if run+1 < len(starts) {
					end = starts[run+1]
				}
				run++
				if next < len(prompts) && (end.IsZero() || prompts[next].CreatedAt.Before(end)) {
					send(root, chunkUpdate{SessionUpdate: updateUserMessageChunk, Content: textBlock(prompts[next].Text())})
					next++
				}
				if openRun != "" && rs.RunID == openRun {
					break records
				}
			}
			switch v := r.Event.(type) {
			case event.StreamComplete:
				lastStop = event.StopCompleted
			case event.RunError:
				lastStop = event.StopError
				if v.Code == "aborted" {
					lastStop = event.StopAborted
				}
			}
			conv.Emit(r.Event)
			continue
		}
		conv.Emit(r.Event) // already wrapped relative to root by session.ReplayTree
	}
	conv.Finish(lastStop)
}

func userPrompts(msgs []session.Message) []session.Message {
	var out []session.Message
	for _, m := range msgs {
		if m.Role == model.RoleUser && !m.Synthetic {
			out = append(out, m)
		}
	}
	return out
}

// replayMessages replays a conversation that has no event log.
func replayMessages(sid string, msgs []session.Message, send sendFunc) {
	for _, m := range msgs {
		switch m.Role {
		case model.RoleUser:
			if m.Synthetic {
				continue
			}
			if t := m.Text(); t != "" {
				send(sid, chunkUpdate{SessionUpdate: updateUserMessageChunk, Content: textBlock(t)})
			}
		case model.RoleAssistant:
			for _, p := range m.Parts {
				switch p.Kind {
				case model.PartThinking:
					send(sid, chunkUpdate{SessionUpdate: updateAgentThoughtChunk, Content: textBlock(p.Text)})
				case model.PartText:
					send(sid, chunkUpdate{SessionUpdate: updateAgentMessageChunk, Content: textBlock(p.Text)})
				case model.PartToolCall:
					send(sid, toolCallUpdate{
						SessionUpdate: updateToolCall, ToolCallID: p.ToolCallID, Title: p.ToolName,
						Kind: "other", Status: statusInProgress, RawInput: rawJSON(p.Args),
					})
				}
			}
		case model.RoleTool:
			for _, p := range m.Parts {
				if p.Kind != model.PartToolResult {
					continue
				}
				status := statusCompleted
				if p.IsError {
					status = statusFailed
				}
				u := toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: p.ToolCallID, Status: status}
				text := p.Text
				if readable, child, stop, ok := spawn.ReadableResult(text); ok {
					text = readable // as live: the answer in words, the rest in _meta
					u.Meta = map[string]any{"agentpool": map[string]any{"child_session_id": child, "stop_reason": stop}}
				}
				if text != "" {
					u.Content = []toolCallContent{textContent(text)}
				}
				send(sid, u)
			}
		}
	}
}

// replayRun sends the part of root sid's history that replay(sid, openRun)
// left out: the records of that run on, its prompt aside. The run's cards
// are closed only when the run ended in the store; else they stay in
// progress (another process goes on with it).
func (c *conn) replayRun(sid, openRun string) error {
	ctx := context.WithoutCancel(c.ctx)
	recs, err := session.ReplayTree(ctx, c.s.pool.Store(), sid)
	if err != nil {
		return err
	}
	c.mu.Lock()
	view := c.view
	c.mu.Unlock()
	conv := newConverter(sid, view, c.updater(sid), c.log)
	conv.noTerminals = true
	from := len(recs)
	for i, r := range recs {
		if rs, ok := r.Event.(event.RunStarted); ok && r.Record.SessionID == sid && rs.RunID == openRun {
			from = i
		}
	}
	ended, lastStop := false, event.StopCompleted
	for _, r := range recs[from:] {
		if r.Record.SessionID == sid {
			switch v := r.Event.(type) {
			case event.StreamComplete:
				ended, lastStop = true, event.StopCompleted
			case event.RunError:
				ended, lastStop = true, event.StopError
				if v.Code == "aborted" {
					lastStop = event.StopAborted
				}
			}
		}
		conv.Emit(r.Event)
	}
	if ended {
		conv.Finish(lastStop)
	}
	return nil
}
