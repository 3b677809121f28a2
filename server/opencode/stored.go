package opencode

import (
	"context"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
)

// The stored truth of a session read back: what its record says of its
// last run (status, stop reason, error, duration, own and subtree totals)
// goes out in the session's metadata, and a transcript rebuilt from the
// store takes its times, its run's usage and its error from the session's
// event log and record, not from the time a message was stored. Without
// them a run read back after a restart showed done when it was aborted,
// and every reasoning "took 0ms".

// recordMeta is the metadata of a wire session: {agentpool: {...}} with
// the record's status, stop reason, error, duration of its last run, and
// its own usage and cost (tokens and cost of the wire session are the
// subtree's). OpenCode's Session has a free-form metadata object; its
// clients ignore what they do not know.
func recordMeta(rec session.Session) map[string]any {
	m := map[string]any{"status": string(rec.Status)}
	if rec.StopReason != "" {
		m["stopReason"] = string(rec.StopReason)
	}
	if e, _ := rec.Metadata["error"].(string); e != "" {
		m["error"] = e
	}
	if rec.DurationMS > 0 {
		m["durationMs"] = rec.DurationMS
	}
	u := rec.Usage
	m["own"] = map[string]any{
		"tokens": tokens(u.InputTokens, u.OutputTokens, u.ReasoningTokens, u.CacheReadTokens, u.CacheWriteTokens),
		"cost":   rec.Cost,
	}
	return map[string]any{"agentpool": m}
}

// ended reports whether a record's last run ended badly, and its error:
// aborted (MessageAbortedError), failed or interrupted (UnknownError).
func endError(rec session.Session) any {
	msg, _ := rec.Metadata["error"].(string)
	switch rec.Status {
	case session.StatusAborted:
		if msg == "" {
			msg = "aborted"
		}
		return wire.MessageAbortedError{Name: "MessageAbortedError", Data: wire.ErrorData{Message: msg}}
	case session.StatusError, session.StatusInterrupted:
		if msg == "" {
			msg = string(rec.StopReason)
		}
		if msg == "" {
			msg = string(rec.Status)
		}
		return messageError(string(rec.StopReason), msg)
	}
	return nil
}

// response is one model response of a session's event log: from when it
// was asked for (the run's start, or the end of the tool calls before
// it) to its last part, with the time spans of its reasoning parts.
type response struct {
	asked, first, last int64
	thinking           [][2]int64
	model              string // the run's chosen model (run_started), "" for the agent's own
}

// timing is what a session's event log says of when things happened, in
// Unix milliseconds.
type timing struct {
	responses []response
	tools     map[string][2]int64 // tool call id -> start, end (0: never ended)
	spawned   map[string]string   // tool call id -> child session id
	usage     event.Usage         // of the last run (its stream_complete)
	cost      float64
	runError  string // the last run's run_error, if it failed
}

// timingOf reads the times of recs (one session's log, in order). A new
// response starts when a part index does not grow (each model response
// numbers its parts from 0), as the live projection splits them.
func timingOf(recs []session.Record) timing {
	t := timing{tools: map[string][2]int64{}, spawned: map[string]string{}}
	var cur *response
	last := -1
	asked := int64(0)
	open := map[int]int64{} // part index -> thinking start
	runModel := ""
	for _, r := range recs {
		at := ms(r.Time)
		switch ev := r.Event.(type) {
		case event.RunStarted:
			asked, cur, last = at, nil, -1
			t.runError = ""
			runModel = ev.Model
		case event.PartStart:
			if cur == nil || ev.Index <= last {
				if cur != nil && cur.last > asked {
					asked = cur.last
				}
				t.responses = append(t.responses, response{asked: asked, first: at, model: runModel})
				cur = &t.responses[len(t.responses)-1]
				clear(open)
			}
			last = ev.Index
			cur.last = at
			if ev.Part.PartKind == event.PartThinking {
				open[ev.Index] = at
			}
		case event.PartDelta:
			if cur != nil {
				cur.last = at
			}
		case event.PartEnd:
			if cur == nil {
				continue
			}
			cur.last = at
			if start, ok := open[ev.Index]; ok {
				cur.thinking = append(cur.thinking, [2]int64{start, at})
				delete(open, ev.Index)
			}
		case event.ToolCallStart:
			t.tools[ev.ToolCallID] = [2]int64{at, 0}
		case event.ToolCallComplete:
			span := t.tools[ev.ToolCallID]
			if span[0] == 0 {
				span[0] = at
			}
			span[1] = at
			t.tools[ev.ToolCallID] = span
			if at > asked {
				asked = at
			}
		case event.SpawnSessionStart:
			if ev.ToolCallID != "" {
				t.spawned[ev.ToolCallID] = ev.ChildSessionID
			}
		case event.StreamComplete:
			t.usage, t.cost = ev.Message.Usage, ev.Message.Cost
		case event.RunError:
			t.runError = ev.Message
		}
	}
	return t
}

// applyTiming gives the assistant messages of a stored transcript (in
// order) the times of the model responses of the log, in order, and
// their reasoning parts the times of the log's reasoning; the last
// message gets the run's usage. The responses of a run on a model chosen
// for it (run_started's model) name that model, refOf giving its
// provider. Messages beyond what the log has keep their stored time.
func (t *transcript) applyTiming(tm timing, rec session.Session, refOf func(agent, modelID string) wire.ModelRef) {
	i := 0
	var lastAsst *wire.AssistantMessage
	for _, m := range t.msgs {
		if m.asst == nil {
			continue
		}
		lastAsst = m.asst
		if i >= len(tm.responses) {
			i++
			continue
		}
		r := tm.responses[i]
		i++
		m.asst.Time.Created = r.asked
		if r.model != "" {
			ref := refOf(m.asst.Agent, r.model)
			m.asst.ProviderID, m.asst.ModelID = ref.ProviderID, ref.ModelID
		}
		m.asst.Time.Completed = max(r.last, r.asked)
		k := 0
		for _, tp := range m.parts {
			switch p := tp.cur.(type) {
			case *wire.ReasoningPart:
				if k < len(r.thinking) {
					c := *p
					c.Time = wire.PartTime{Start: r.thinking[k][0], End: r.thinking[k][1]}
					tp.set(&c)
				}
				k++
			case *wire.TextPart:
				if p.Time != nil {
					c := *p
					c.Time = &wire.PartTime{Start: r.first, End: max(r.last, r.first)}
					tp.set(&c)
				}
			case *wire.ToolPart:
				span, ok := tm.tools[p.CallID]
				if !ok {
					continue
				}
				setToolTimes(tp, p, span)
			}
		}
	}
	if lastAsst != nil {
		u := tm.usage
		if u.IsZero() {
			u = rec.Usage
		}
		lastAsst.Tokens = tokens(u.InputTokens, u.OutputTokens, u.ReasoningTokens, u.CacheReadTokens, u.CacheWriteTokens)
		lastAsst.Cost = tm.cost
		if lastAsst.Cost == 0 {
			lastAsst.Cost = rec.Cost
		}
		if e := endError(rec); e != nil {
			lastAsst.Error = e
		}
	}
}

// setToolTimes gives a stored tool part the times of its call in the log.
func setToolTimes(tp *tpart, p *wire.ToolPart, span [2]int64) {
	c := *p
	switch st := p.State.(type) {
	case *wire.ToolStateRunning:
		s := *st
		s.Time.Start = span[0]
		c.State = &s
	case *wire.ToolStateCompleted:
		s := *st
		s.Time.Start = span[0]
		if span[1] > 0 {
			s.Time.End = span[1]
		}
		c.State = &s
	case *wire.ToolStateError:
		s := *st
		s.Time.Start = span[0]
		if span[1] > 0 {
			s.Time.End = span[1]
		} else if s.Time.End < s.Time.Start {
			s.Time.End = s.Time.Start
		}
		c.State = &s
	default:
		return
	}
	tp.set(&c)
}

// unfinished ends a stored tool call that never got its result (its run
// was aborted or failed while it ran): an error that says how the run
// ended, linked to the child session it spawned, if any, as a finished
// delegation is, so that the card names the child and its title.
func (s *historyAPI) unfinished(ctx context.Context, sc *storedCall, child string, rec session.Session) {
	tp := sc.tp
	part := tp.cur.(*wire.ToolPart)
	run := part.State.(*wire.ToolStateRunning)
	c := *part
	msg := "the tool call did not complete"
	switch rec.Status {
	case session.StatusAborted:
		msg = "the tool call did not complete: the run was aborted"
	case session.StatusError, session.StatusInterrupted:
		if e, _ := rec.Metadata["error"].(string); e != "" {
			msg = "the tool call did not complete: the run failed: " + e
		}
	}
	var meta map[string]any
	if child != "" {
		meta = map[string]any{"sessionId": child, "parentSessionId": rec.ID}
		if k, err := s.store.GetSession(ctx, child); err == nil {
			if k.StopReason != "" {
				meta["stopReason"] = string(k.StopReason)
			}
			if k.Status == session.StatusAborted {
				msg = "the child session was aborted"
			}
		}
		if c.Tool != "task" {
			v := asTask(viewTool(s.root, sc.call(nil), sc.args), sc.name, sc.args)
			c.Tool = "task"
			run = &wire.ToolStateRunning{Status: "running", Input: v.input, Title: v.title, Time: run.Time}
		}
	}
	c.State = &wire.ToolStateError{Status: "error", Input: run.Input, Error: msg, Metadata: meta, Time: wire.ToolTime{Start: run.Time.Start, End: run.Time.Start}}
	tp.set(&c)
}
