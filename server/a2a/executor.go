package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// MetaKey is the metadata key of a status update or artifact under which
// agentpool says which session (and, for a delegation, which member) it
// is about.
const MetaKey = "agentpool"

// maxChunk bounds the text of one event (see the package documentation).
const maxChunk = 16 << 10

// executor runs one node of the pool for the SDK (a2asrv.AgentExecutor).
type executor struct {
	s    *Server
	node string
}

// Execute runs the task's message as a root run of the node and writes
// its events to q.
func (x *executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	s := x.s
	if !s.begin() {
		return q.Write(ctx, finalStatus(rc, a2a.TaskStateCanceled, "the server is shutting down"))
	}
	defer s.wg.Done()
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	prompt, err := promptOf(rc.Message)
	if err != nil {
		return q.Write(ctx, finalStatus(rc, a2a.TaskStateRejected, err.Error()))
	}
	req := pool.RunRequest{Node: x.node, Prompt: prompt}
	sid, known := s.contexts.session(rc.ContextID)
	if known {
		req.SessionID = sid
	} else {
		sid = id.DescendingAt(id.Session, time.Now())
		req.NewSessionID = sid
	}
	s.contexts.put(rc.ContextID, sid)
	s.running.Store(rc.TaskID, sid)
	defer s.running.Delete(rc.TaskID)

	working := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, nil)
	working.Metadata = map[string]any{MetaKey: map[string]any{"session_id": sid, "agent": x.node, "continued": known}}
	if err := q.Write(ctx, working); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.runs, cancel)()
	st := newStream(runCtx, sid, rc, q, s.opts.QueueSize)
	res, err := s.pool.RunSink(runCtx, req, st)
	text := st.close()
	if err != nil {
		if errors.Is(err, session.ErrRunning) {
			err = fmt.Errorf("context %s has a task in progress (session %s): wait for it to end or cancel it", rc.ContextID, sid)
		}
		return q.Write(ctx, finalStatus(rc, a2a.TaskStateFailed, err.Error()))
	}
	r := res.Result
	if r.Output != "" && r.Output != text {
		// The answer did not stream as the root's last text (a team's
		// answer, or a model that does not stream): it is the response.
		for ev := range artifactChunks(rc, "", "response", r.Output, nil) {
			if err := q.Write(ctx, ev); err != nil {
				return err
			}
		}
	}
	state, msg := a2a.TaskStateCompleted, r.Output
	switch r.StopReason {
	case event.StopAborted, event.StopInterrupted:
		state, msg = a2a.TaskStateCanceled, "cancelled"
	case event.StopError:
		state, msg = a2a.TaskStateFailed, "the run failed"
		if r.Err != nil {
			msg = r.Err.Error()
		}
	}
	if len(msg) > maxChunk {
		msg = "the answer is in the artifact named response"
	}
	ev := finalStatus(rc, state, msg)
	ev.Metadata = map[string]any{MetaKey: map[string]any{"session_id": res.SessionID, "stop_reason": string(r.StopReason),
		"input_tokens": res.TotalUsage.InputTokens, "output_tokens": res.TotalUsage.OutputTokens}}
	// The context may be cancelled (tasks/cancel wrote its own final
	// status): the write then fails, which is no error of the run.
	if err := q.Write(ctx, ev); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// Cancel ends the task canceled and cancels its session (its run ends
// aborted with its subtree). The status goes first: written after the
// run ended, it would find the task's queue gone (the run's own final
// status came first). The SDK answers tasks/cancel once Execute returned,
// so the session has ended by then.
func (x *executor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	err := q.Write(ctx, finalStatus(rc, a2a.TaskStateCanceled, "cancelled by tasks/cancel"))
	if v, ok := x.s.running.Load(rc.TaskID); ok {
		if _, cerr := x.s.pool.Cancel(ctx, v.(string), "a2a"); cerr != nil {
			x.s.log.Debug("a2a: cancel the task's session", "task", rc.TaskID, "session", v, "err", cerr)
		}
	}
	return err
}

// begin counts a run in, unless the server is closed.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs.Err() != nil {
		return false
	}
	s.wg.Add(1)
	return true
}

// finalStatus is the last status of a task, with text as the agent's
// message ("" for none).
func finalStatus(rc a2a.TaskInfoProvider, state a2a.TaskState, text string) *a2a.TaskStatusUpdateEvent {
	var msg *a2a.Message
	if text != "" {
		msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: text})
	}
	ev := a2a.NewStatusUpdateEvent(rc, state, msg)
	ev.Final = true
	return ev
}

// promptOf is the text of a message: its text parts, and its data parts
// as JSON, one paragraph each. File parts are refused by name.
func promptOf(m *a2a.Message) (string, error) {
	if m == nil {
		return "", errors.New("no message")
	}
	var parts []string
	for _, p := range m.Parts {
		switch v := p.(type) {
		case a2a.TextPart:
			parts = append(parts, v.Text)
		case *a2a.TextPart:
			parts = append(parts, v.Text)
		case a2a.DataPart:
			b, err := json.Marshal(v.Data)
			if err != nil {
				return "", fmt.Errorf("data part: %w", err)
			}
			parts = append(parts, string(b))
		case a2a.FilePart, *a2a.FilePart:
			return "", errors.New("file parts are not supported: agentpool agents take text (text parts, or data parts as JSON)")
		}
	}
	text := strings.TrimSpace(strings.Join(parts, "\n\n"))
	if text == "" {
		return "", errors.New("the message has no text: send a text part")
	}
	return text, nil
}
