package session

import (
	"context"
	"time"

	"github.com/agentpool/agentpool/event"
	ids "github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
)

// A run whose process died (killed, crashed, out of power) ends nothing:
// its sessions stay marked running, its log has children that started and
// never ended, and its conversation may end with an assistant tool call
// without a result, which providers reject. CloseInterrupted writes what
// the run would have written had it ended; History makes any stored
// conversation one that a provider accepts.

// InterruptedResult is the result of a tool call whose run stopped before
// the call returned. The model reads it when the session is resumed.
const InterruptedResult = "interrupted: the run stopped before this tool call returned (its process ended); what the call did is unknown"

// InterruptedCode is the code of the run_error that closes an interrupted
// run in its session's log.
const InterruptedCode = "interrupted"

// interruptedMessage is the error of an interrupted child and the message
// of the run_error that closes an interrupted run.
const interruptedMessage = "interrupted: the process running this session stopped before the session ended"

// CloseInterrupted closes what a run that stopped without ending left open
// in session id, as the run would have had it ended. To the session's log
// it appends, in the order a live run writes them:
//
//   - for each child the log started and never ended: the child closed the
//     same way first (when its record says it has not ended), then its
//     spawn_session_end, with stop reason interrupted (or the child's own,
//     when its record says it ended);
//   - for each tool_call_start without a tool_call_complete: a
//     tool_call_complete whose result is the error InterruptedResult;
//   - a run_error with code InterruptedCode when the last run_started has
//     no stream_complete or run_error after it.
//
// To the conversation it appends a tool message with a result for each
// call of the last assistant message that has none (the result the log
// has for it, else the error InterruptedResult), so that a provider takes
// the conversation again. A session whose record says running is then
// marked interrupted (stop reason interrupted).
//
// It only adds what is missing: calling it again changes nothing. It is
// for a session nobody runs: the caller holds its claim (or, in a store's
// recovery, took over the dead run's sessions).
func CloseInterrupted(ctx context.Context, st Store, id string) error {
	s, err := st.GetSession(ctx, id)
	if err != nil {
		return err
	}
	_, err = closeSession(ctx, st, s, interrupted)
	return err
}

// ending is how what a run left open is closed: the status and stop
// reason of its unfinished sessions, the code and message of their
// run_error and the error of their spawn_session_end, and the result of
// their unfinished tool calls.
type ending struct {
	status        Status
	stop          event.StopReason
	code, message string
	result        string
}

// interrupted closes a run whose process stopped (CloseInterrupted).
var interrupted = ending{StatusInterrupted, event.StopInterrupted, InterruptedCode, interruptedMessage, InterruptedResult}

// openLog is what a session's log left open.
type openLog struct {
	children []event.SpawnSessionStart // started, not ended, in order
	calls    []event.ToolCallStart     // started, not completed, in order
	results  map[string]event.ToolCallComplete
	run      *event.RunStarted // the last run, when it has no end
	last     time.Time         // the time of the last event
	// started and ends are every start and end of a child (FindWaiting).
	started []event.SpawnSessionStart
	ends    map[string]event.SpawnSessionEnd
}

func readLog(recs []Record) openLog {
	var (
		l       = openLog{results: map[string]event.ToolCallComplete{}, ends: map[string]event.SpawnSessionEnd{}}
		started []event.SpawnSessionStart
		calls   []event.ToolCallStart
		ended   = map[string]bool{}
	)
	for _, r := range recs {
		l.last = r.Time
		switch e := r.Event.(type) {
		case event.RunStarted:
			l.run = &e
		case event.StreamComplete, event.RunError:
			l.run = nil
		case event.SpawnSessionStart:
			started = append(started, e)
		case event.SpawnSessionEnd:
			ended[e.ChildSessionID] = true
			l.ends[e.ChildSessionID] = e
		case event.ToolCallStart:
			calls = append(calls, e)
		case event.ToolCallComplete:
			l.results[e.ToolCallID] = e
		}
	}
	l.started = started
	for _, c := range started {
		if !ended[c.ChildSessionID] {
			ended[c.ChildSessionID] = true // a repeated start is closed once
			l.children = append(l.children, c)
		}
	}
	for _, c := range calls {
		if _, ok := l.results[c.ToolCallID]; !ok {
			l.calls = append(l.calls, c)
		}
	}
	return l
}

// unfinished reports whether a session's record says its run has not
// ended.
func unfinished(s Session) bool {
	return s.Status == StatusRunning || s.Status == StatusInterrupted
}

// closeSession closes s (see CloseInterrupted) and returns the time of the
// last event its run logged.
func closeSession(ctx context.Context, st Store, s Session, how ending) (time.Time, error) {
	recs, err := st.Events(ctx, s.ID, 0)
	if err != nil {
		return time.Time{}, err
	}
	l := readLog(recs)
	var add []event.Event
	for _, start := range l.children {
		end, err := closeChild(ctx, st, s.ID, start, how)
		if err != nil {
			return l.last, err
		}
		add = append(add, end)
	}
	for _, c := range l.calls {
		add = append(add, event.ToolCallComplete{
			ToolCallID: c.ToolCallID, ToolName: c.ToolName, ToolInput: c.RawInput,
			ToolResult: how.result, IsError: true, AgentName: s.AgentName,
		})
	}
	if l.run != nil {
		add = append(add, event.RunError{Message: how.message, Code: how.code, RunID: l.run.RunID, AgentName: l.run.AgentName})
	}
	if len(add) > 0 {
		if err := st.AppendEvents(ctx, s.ID, add...); err != nil {
			return l.last, err
		}
	}
	if err := closeConversation(ctx, st, s.ID, l.results, how.result); err != nil {
		return l.last, err
	}
	if s.Status == StatusRunning || (s.Status == StatusInterrupted && s.StopReason == "") {
		err = st.UpdateSession(ctx, s.ID, func(r *Session) {
			if unfinished(*r) {
				r.Status, r.StopReason = how.status, how.stop
			}
		})
	}
	return l.last, err
}

// closeChild closes the child that start started (when its record says
// it has not ended) and returns its spawn_session_end.
func closeChild(ctx context.Context, st Store, parent string, start event.SpawnSessionStart, how ending) (event.SpawnSessionEnd, error) {
	end := event.SpawnSessionEnd{
		ChildSessionID: start.ChildSessionID, ParentSessionID: parent, ToolCallID: start.ToolCallID,
		SourceName: start.SourceName, SourceType: start.SourceType, Depth: start.Depth,
		StopReason: how.stop, Error: how.message,
	}
	child, err := st.GetSession(ctx, start.ChildSessionID)
	switch {
	case err != nil:
		// Deleted since: its end is all there is to write.
		return end, nil
	case unfinished(child):
		last, err := closeSession(ctx, st, child, how)
		if err != nil {
			return end, err
		}
		if !last.IsZero() && last.After(child.CreatedAt) {
			end.DurationMS = last.Sub(child.CreatedAt).Milliseconds()
		}
	default:
		// It ended, and only its end was lost: say how it ended.
		end.StopReason, end.Error = child.StopReason, ""
		if end.StopReason == "" {
			end.StopReason = event.StopCompleted
		}
		if e, ok := child.Metadata["error"].(string); ok {
			end.Error = e
		}
		if !child.TotalUsage.IsZero() {
			u := child.TotalUsage
			end.Usage = &u
		}
		end.Cost, end.DurationMS = child.TotalCost, child.DurationMS
	}
	return end, nil
}

// closeConversation appends the missing results of the calls of the
// session's last assistant message, when only tool messages follow it (a
// result stored elsewhere would not be where a provider looks for it:
// History puts it right for the request).
func closeConversation(ctx context.Context, st Store, id string, logged map[string]event.ToolCallComplete, result string) error {
	msgs, err := st.Messages(ctx, id)
	if err != nil {
		return err
	}
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role == model.RoleTool {
		i--
	}
	if i < 0 || msgs[i].Role != model.RoleAssistant {
		return nil
	}
	missing := missingResults(msgs[i].Message, msgs[i+1:], logged, result)
	if len(missing) == 0 {
		return nil
	}
	return st.AppendMessages(ctx, id, Message{
		ID: ids.Ascending(ids.Message), SessionID: id, AgentName: msgs[i].AgentName, CreatedAt: time.Now(),
		Message: model.Message{Role: model.RoleTool, Parts: missing},
	})
}

// missingResults returns a result for each tool call of assistant that
// none of the tool messages after it answers: the logged result when
// there is one, else the error result.
func missingResults(assistant model.Message, after []Message, logged map[string]event.ToolCallComplete, result string) []model.Part {
	calls := assistant.ToolCalls()
	if len(calls) == 0 {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range after {
		for _, p := range m.Parts {
			if p.Kind == model.PartToolResult {
				answered[p.ToolCallID] = true
			}
		}
	}
	var out []model.Part
	for _, c := range calls {
		if answered[c.ToolCallID] {
			continue
		}
		p := model.Part{Kind: model.PartToolResult, ToolCallID: c.ToolCallID, ToolName: c.ToolName, Text: result, IsError: true}
		if r, ok := logged[c.ToolCallID]; ok {
			p.Text, p.IsError = r.ToolResult, r.IsError
		}
		out = append(out, p)
	}
	return out
}

// History returns the conversation of msgs as a provider takes it: every
// tool call of an assistant message has a result in the tool messages
// right after it. A call without one (its run stopped before it returned)
// gets the error InterruptedResult there; msgs is not changed.
func History(msgs []Message) []model.Message {
	out := make([]model.Message, 0, len(msgs)+1)
	for i := 0; i < len(msgs); i++ {
		out = append(out, msgs[i].Message)
		if msgs[i].Role != model.RoleAssistant {
			continue
		}
		j := i + 1
		for j < len(msgs) && msgs[j].Role == model.RoleTool {
			j++
		}
		missing := missingResults(msgs[i].Message, msgs[i+1:j], nil, InterruptedResult)
		if len(missing) == 0 {
			continue
		}
		for _, m := range msgs[i+1 : j] {
			out = append(out, m.Message)
		}
		out = append(out, model.Message{Role: model.RoleTool, Parts: missing})
		i = j - 1
	}
	return out
}
