package opencode

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/otelprop"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tracing"
)

// errAborted is the cause of a run the client aborted.
var errAborted = errors.New("aborted by the client")

// activeRun is a run in progress, by root session.
type activeRun struct {
	userMsg string
	node    string
	done    chan struct{}
}

// prompt is a validated prompt request.
type prompt struct {
	rec     session.Session
	sid     string
	node    string
	text    string
	body    wire.PromptBody
	created time.Time
	// parent is the caller's span of the request's traceparent (invalid
	// without one): the parent of the run's root span when traced.
	parent trace.SpanContext
	// hold is the prompt's share of the prompt budget (promptbudget.go),
	// released when its run ends.
	hold *promptHold
	// textAt is where, in text, the text of each body part is (by index
	// in body.Parts; -1: none), whose string is that substring of text;
	// partAt the same by the id of the transcript part made of it.
	textAt []int
	partAt map[string]int
	// toChild: the session is a child running in its root's run; the
	// prompt is delivered to it as a message (childmsg.go).
	toChild bool
	// model is the model the prompt's turn runs on (modelchoice.go).
	model modelChoice
}

// promptsAPI serves the prompt routes (message, prompt_async, abort) and
// runs the prompts, one at a time per session (sessionRuns, under the
// session's lock).
type promptsAPI struct {
	*base
}

// runsOfLocked returns the run queue of a session. st.mu is held.
func (s *promptsAPI) runsOfLocked(st *sessState) *sessionRuns {
	if st.runs == nil {
		q := &sessionRuns{}
		q.gen, q.cancel = context.WithCancelCause(s.runs)
		st.runs = q
	}
	return st.runs
}

// parsePrompt validates a prompt body. It answers and returns false on
// failure. A prompt it returns holds its share of the prompt budget,
// reserved before the body is read.
func (s *promptsAPI) parsePrompt(w http.ResponseWriter, r *http.Request) (*prompt, bool) {
	sid := r.PathValue("sessionID")
	rec, err := s.store.GetSession(r.Context(), sid)
	if err != nil {
		storeError(w, sid, err)
		return nil, false
	}
	if r.ContentLength > s.opts.MaxBodyBytes {
		discardBody(r)
		bodyTooLarge(w, s.opts.MaxBodyBytes)
		return nil, false
	}
	hold, refused := s.budget.hold(sid, s.expectedBodySize(r))
	if refused != nil {
		discardBody(r)
		writeRefused(w, refused)
		return nil, false
	}
	p, ok := s.parsePromptBody(w, r, rec, hold)
	if !ok {
		s.budget.release(hold)
	}
	return p, ok
}

// parsePromptBody reads and validates the body of a prompt for rec.
func (s *promptsAPI) parsePromptBody(w http.ResponseWriter, r *http.Request, rec session.Session, hold *promptHold) (*prompt, bool) {
	sid := rec.ID
	raw, ok := s.bodyBytes(w, r)
	if !ok {
		return nil, false
	}
	if refused := s.budget.resize(hold, len(raw)); refused != nil {
		writeRefused(w, refused)
		return nil, false
	}
	var body wire.PromptBody
	if !decodeBody(w, raw, &body, false) {
		return nil, false
	}
	if body.Parts == nil {
		badRequest(w, "Body", "missing required field parts (an array of text, agent or subtask parts)")
		return nil, false
	}
	if body.MessageID != "" && !strings.HasPrefix(body.MessageID, id.Message) {
		badRequest(w, "Body", "messageID must be a message id (msg...), got %q", body.MessageID)
		return nil, false
	}
	node := body.Agent
	if node == "" {
		node = rec.AgentName
		if _, ok := s.pool.Node(node); !ok {
			node = s.pool.DefaultNode()
		}
	} else if _, ok := s.pool.Node(node); !ok {
		badRequest(w, "Body", "unknown agent %q; available: %s", node, strings.Join(s.pool.NodeNames(), ", "))
		return nil, false
	}
	choice, err := chooseModel(s.base, node, body.Model)
	if err != nil {
		badRequest(w, "Body", "%v", err)
		return nil, false
	}
	var pieces []promptPiece
	for i, p := range body.Parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				pieces = append(pieces, promptPiece{part: i, text: p.Text, own: p.Text})
			}
		case "agent":
			if _, ok := s.pool.Node(p.Name); !ok {
				badRequest(w, "Body", "parts[%d]: unknown agent %q", i, p.Name)
				return nil, false
			}
			pieces = append(pieces, promptPiece{part: -1, text: fmt.Sprintf("Use the task tool to hand this to @%s (agent_or_team: %q).", p.Name, p.Name)})
		case "subtask":
			if _, ok := s.pool.Node(p.Agent); !ok || p.Prompt == "" {
				badRequest(w, "Body", "parts[%d]: a subtask part needs a known agent and a prompt", i)
				return nil, false
			}
			pieces = append(pieces, promptPiece{part: i, own: p.Prompt,
				text: fmt.Sprintf("Use the task tool with agent_or_team %q, description %q and this prompt:\n%s", p.Agent, p.Description, p.Prompt)})
		case "file":
			badRequest(w, "Body", "parts[%d]: file parts are not supported by this server", i)
			return nil, false
		default:
			badRequest(w, "Body", "parts[%d]: unknown part type %q (want text, agent or subtask)", i, p.Type)
			return nil, false
		}
	}
	text, textAt := joinPrompt(body.Parts, pieces)
	if strings.TrimSpace(text) == "" {
		badRequest(w, "Body", "the prompt has no text")
		return nil, false
	}
	// Prompts of this server queue up; a session that runs in a run of its
	// own (a subagent at work) cannot take one.
	ours := false
	if st := s.facts.get(sid); st != nil {
		st.mu.Lock()
		ours = st.runs != nil && st.runs.running
		st.mu.Unlock()
	}
	p := &prompt{rec: rec, sid: sid, node: node, text: text, body: body, created: time.Now(), parent: otelprop.FromHeader(r.Header),
		hold: hold, textAt: textAt, model: choice}
	if !ours && s.pool.Runs(r.Context(), sid) {
		if rec.ParentID != "" && !body.NoReply {
			// A child at work in its root's run: the prompt is a message
			// it reads at its next turn (childmsg.go).
			p.toChild = true
			return p, true
		}
		busy(w, sid)
		return nil, false
	}
	if !ours && rec.ParentID != "" && !body.NoReply {
		if anc := s.runningAncestor(r.Context(), rec); anc != "" {
			// Its tree's run holds the store's claim: a run of its own
			// could not start (childmsg.go).
			writeJSON(w, http.StatusConflict, wire.SessionBusyError{Tag: "SessionBusyError", SessionID: sid,
				Message: "Session " + sid + " has ended, but the run of its tree goes on (session " + anc +
					" runs): its parent can continue it (send_message); prompt it here once that run has ended"})
			return nil, false
		}
	}
	return p, true
}

// busy answers 409: the session runs in a run that is not this server's
// prompt.
func busy(w http.ResponseWriter, sid string) {
	writeJSON(w, http.StatusConflict, wire.SessionBusyError{Tag: "SessionBusyError", SessionID: sid,
		Message: "Session " + sid + " is busy: it runs as part of another run; prompt it when it is idle"})
}

// promptPiece is one piece of a prompt's text: a text part's text, or the
// instruction an agent or subtask part adds. part is the body part whose
// own string (a text part's text, a subtask's prompt) the piece ends with,
// -1 for none.
type promptPiece struct {
	part      int
	text, own string
}

// joinPrompt joins the pieces of a prompt's text, blank lines between
// them, and points the long strings (over maxKeptText) of the parts they
// came from at their place in it, so that the prompt's text is in memory
// once (a single piece is the part's own string). A short string keeps
// its own copy: pointing into the text would keep all of it alive after
// the long ones went on the shelf. It returns the text and where each
// part's string is in it (-1: nowhere).
func joinPrompt(parts []wire.PartInput, pieces []promptPiece) (string, []int) {
	at := make([]int, len(parts))
	for i := range at {
		at[i] = -1
	}
	texts := make([]string, len(pieces))
	for i, pc := range pieces {
		texts[i] = pc.text
	}
	text := strings.Join(texts, "\n\n")
	off := 0
	for _, pc := range pieces {
		if pc.part >= 0 {
			start := off + len(pc.text) - len(pc.own)
			at[pc.part] = start
			if own := text[start : start+len(pc.own)]; len(own) > maxKeptText {
				if parts[pc.part].Type == "subtask" {
					parts[pc.part].Prompt = own
				} else {
					parts[pc.part].Text = own
				}
			}
		}
		off += len(pc.text) + len("\n\n")
	}
	return text, at
}

// userMessageLocked records and publishes the user message of a prompt.
// st.mu is held.
func (s *promptsAPI) userMessageLocked(st *sessState, p *prompt) *tmsg {
	s.dirOf(p.rec)
	t := s.facts.touch(st, true)
	mid := p.body.MessageID
	if mid == "" || t.byID[mid] != nil {
		mid = id.Ascending(id.Message)
	}
	m := &tmsg{user: &wire.UserMessage{ID: mid, SessionID: p.sid, Role: "user", Time: wire.UserMessageTime{Created: ms(p.created)},
		Agent: p.node, Model: p.model.ref, System: p.body.System, Tools: p.body.Tools}}
	t.add(m)
	s.publish("message.updated", p.sid, messageProps{SessionID: p.sid, Info: m.user})
	now := ms(p.created)
	for i, in := range p.body.Parts {
		pid := in.ID
		if pid == "" || !strings.HasPrefix(pid, id.Part) || t.parts[pid] != nil {
			pid = newPartID()
		}
		var v any
		switch in.Type {
		case "text":
			// User parts carry no time, as OpenCode's own: a client
			// (opencode run) prints a text part with time.end as output.
			v = &wire.TextPart{ID: pid, SessionID: p.sid, MessageID: mid, Type: "text", Text: in.Text, Synthetic: in.Synthetic}
		case "agent":
			v = &wire.AgentPart{ID: pid, SessionID: p.sid, MessageID: mid, Type: "agent", Name: in.Name}
		case "subtask":
			v = &wire.SubtaskPart{ID: pid, SessionID: p.sid, MessageID: mid, Type: "subtask", Prompt: in.Prompt, Description: in.Description, Agent: in.Agent}
		default:
			continue
		}
		t.putPart(m, pid, v)
		if at := p.textAt[i]; at >= 0 {
			if p.partAt == nil {
				p.partAt = map[string]int{}
			}
			p.partAt[pid] = at
		}
		s.publish("message.part.updated", p.sid, partProps{SessionID: p.sid, Part: v, Time: now})
	}
	return m
}

// retitle gives a session created without a title its first prompt's.
func (s *promptsAPI) retitle(ctx context.Context, p *prompt) {
	rec, err := s.store.GetSession(ctx, p.sid)
	if err != nil {
		return
	}
	st := s.facts.ensure(p.sid)
	cur := rec.Title
	if t := st.title.Load(); t != nil {
		cur = *t
	}
	if !strings.HasPrefix(cur, defaultTitlePrefix) {
		return
	}
	title := titleOf(p.text)
	if err := s.store.UpdateSession(ctx, p.sid, func(r *session.Session) { r.Title = title }); err != nil {
		return
	}
	rec.Title = title
	st.mu.Lock()
	st.title.Store(&title)
	s.publish("session.updated", p.sid, sessionInfoProps{SessionID: p.sid, Info: s.wireSession(rec)})
	st.mu.Unlock()
}

// titleOf is a session's title from its first prompt: the first line, cut
// to 60 characters. It looks at those only (a prompt may be megabytes).
func titleOf(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	n := 0
	for i := range line {
		if n == 60 {
			return strings.Clone(line[:i]) + "..."
		}
		n++
	}
	return strings.Clone(line)
}

// handlePrompt answers POST /session/{id}/message: it waits for the turn
// to end and answers the last assistant message with its parts. The run
// goes on when the client goes away; only abort (or shutdown) ends it.
func (s *promptsAPI) handlePrompt(w http.ResponseWriter, r *http.Request) {
	p, ok := s.parsePrompt(w, r)
	if !ok {
		return
	}
	if p.toChild {
		s.messageChild(w, r, p, true)
		return
	}
	if p.body.NoReply {
		writeRaw(w, http.StatusOK, s.noReply(r.Context(), p))
		return
	}
	s.streams.awaitStream(r.Context(), p.sid)
	done := s.enqueue(p)
	select {
	case res := <-done:
		s.streams.awaitDelivery(r.Context(), p.sid)
		writeRaw(w, http.StatusOK, res)
	case <-r.Context().Done():
	}
}

// handlePromptAsync answers POST /session/{id}/prompt_async: 204 at once;
// the prompt runs (after the session's earlier prompts).
func (s *promptsAPI) handlePromptAsync(w http.ResponseWriter, r *http.Request) {
	p, ok := s.parsePrompt(w, r)
	if !ok {
		return
	}
	if p.toChild {
		s.messageChild(w, r, p, false)
		return
	}
	if p.body.NoReply {
		s.noReply(r.Context(), p)
	} else {
		s.enqueue(p)
	}
	w.WriteHeader(http.StatusNoContent)
}

// noReply stores the prompt as a user message without running the model
// (the next run sees it in its history) and returns {info, parts} of it.
func (s *promptsAPI) noReply(ctx context.Context, p *prompt) json.RawMessage {
	defer s.budget.release(p.hold)
	s.history.seed(ctx, p.sid)
	s.retitle(ctx, p)
	st := s.facts.ensure(p.sid)
	st.mu.Lock()
	m := s.userMessageLocked(st, p)
	b, _ := json.Marshal(m.withParts(nil))
	st.mu.Unlock()
	msg := session.Message{ID: m.user.ID, SessionID: p.sid, AgentName: p.node, CreatedAt: p.created, Message: model.UserText(p.text)}
	if err := s.store.AppendMessages(context.WithoutCancel(ctx), p.sid, msg); err != nil {
		s.log.Warn("opencode: store noReply message", "session", p.sid, "err", err)
		return b
	}
	if len(p.text) > maxKeptText {
		sum := sumOf(p.text)
		st.mu.Lock()
		if t := st.trans; t != nil { // (else dropped since, m with it)
			t.shelveLocked(m, p.text, sum, p.partAt)
		}
		st.mu.Unlock()
	}
	return b
}

// enqueue runs a prompt after the session's earlier ones and delivers
// the answer on the returned channel (buffered: nobody needs to read it).
// The prompt's hold on the budget (which admitted it) ends with its run.
func (s *promptsAPI) enqueue(p *prompt) <-chan json.RawMessage {
	done := make(chan json.RawMessage, 1)
	if !s.gate.enter() {
		s.budget.release(p.hold)
		done <- s.emptyAnswer(p, "", "server shutting down", true)
		return done
	}
	ss := s.facts.ensure(p.sid)
	ss.mu.Lock()
	q := s.runsOfLocked(ss)
	gen := q.gen
	var w *waiter
	if q.running {
		w = q.waitLocked(p.hold)
	} else {
		q.running = true
	}
	ss.mu.Unlock()
	go func() {
		defer s.gate.wg.Done()
		done <- s.run(gen, ss, q, w, p)
	}()
	return done
}

// run waits for the prompt's turn (w is nil when it has it already) and
// runs it.
func (s *promptsAPI) run(gen context.Context, ss *sessState, q *sessionRuns, w *waiter, p *prompt) json.RawMessage {
	if w != nil {
		select {
		case <-w.turn:
		case <-gen.Done():
			ss.mu.Lock()
			q.leaveLocked(w, s.budget)
			ss.mu.Unlock()
			return s.abortedAnswer(p)
		}
	}
	defer func() {
		ss.mu.Lock()
		q.releaseLocked()
		ss.mu.Unlock()
		s.budget.release(p.hold) // (done already when the run ran)
	}()
	if gen.Err() != nil {
		return s.abortedAnswer(p)
	}
	ctx, cancel := context.WithCancelCause(gen)
	defer cancel(nil)

	bg := context.WithoutCancel(ctx)
	s.history.seed(bg, p.sid)
	s.retitle(bg, p)
	if err := s.store.UpdateSession(bg, p.sid, func(r *session.Session) {
		r.AgentName = p.node
		delete(r.Metadata, metaRevert) // the prompt goes on from a revert point (revert.go)
	}); err != nil {
		s.log.Warn("opencode: record agent", "session", p.sid, "err", err)
	}
	ar := &activeRun{node: p.node, done: make(chan struct{})}
	ss.mu.Lock()
	ar.userMsg = s.userMessageLocked(ss, p).user.ID
	ss.active = ar
	s.setBusyLocked(ss, p.sid)
	ss.mu.Unlock()

	res, err := s.pool.RunSink(tracing.WithRemoteParent(ctx, p.parent), pool.RunRequest{Node: p.node, Prompt: p.text, SessionID: p.sid, ModelOf: p.model.of}, event.SinkFunc(func(event.Event) {}))
	// A run whose store did not keep its writes failed, although its
	// stream (which the projection followed) completed: no event says so
	// but this session.error.
	failed := err
	if err != nil {
		s.log.Warn("opencode: run did not start", "session", p.sid, "node", p.node, "err", err)
	} else if errors.Is(res.Result.Err, session.ErrNotStored) {
		failed = res.Result.Err
		s.log.Error("opencode: run failed: its writes were not stored", "session", p.sid, "node", p.node, "err", failed)
	} else {
		s.log.Info("opencode: run ended", "session", p.sid, "node", p.node, "stop", res.Result.StopReason)
	}
	rec, gerr := s.store.GetSession(bg, p.sid)
	stored := err == nil && s.promptStored(bg, p)
	var sum [sha256.Size]byte
	if stored {
		sum = sumOf(p.text) // not under the lock: a prompt may be megabytes
	}

	ss.mu.Lock()
	if failed != nil {
		s.publish("session.error", p.sid, sessionErrorProps{SessionID: p.sid, Error: messageError("", failed.Error())})
	}
	if gerr == nil {
		s.publish("session.updated", p.sid, sessionInfoProps{SessionID: p.sid, Info: s.wireSession(rec)})
	}
	ss.active = nil
	var out json.RawMessage
	if t := ss.trans; t != nil {
		if m := t.lastAssistant(); m != nil && m.asst.ParentID == ar.userMsg {
			out, _ = json.Marshal(m.withParts(nil))
		}
		if m := t.byID[ar.userMsg]; m != nil && stored {
			t.shelveLocked(m, p.text, sum, p.partAt)
		}
	}
	// The prompt's room is free, and its long texts are on the shelf,
	// before the session goes idle: the client's next prompt finds both.
	s.budget.release(p.hold)
	s.setIdleLocked(ss, p.sid)
	ss.mu.Unlock()
	close(ar.done)
	if out == nil {
		msg := "the run produced no answer"
		if err != nil {
			msg = err.Error()
		} else if ctx.Err() != nil {
			msg = "aborted"
		}
		out = s.emptyAnswer(p, ar.userMsg, msg, ctx.Err() != nil)
	}
	return out
}

// promptStored reports whether p has a long text (one a transcript keeps
// on the shelf) and the store holds p's text whole as a user message of
// its session (the agent stores its prompt; a team root keeps no
// conversation, so its prompt stays in memory).
func (s *promptsAPI) promptStored(ctx context.Context, p *prompt) bool {
	if len(p.text) <= maxKeptText {
		return false
	}
	msgs, err := s.store.Messages(ctx, p.sid)
	if err != nil {
		return false
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == model.RoleUser && len(m.Parts) == 1 && m.Parts[0].Text == p.text {
			return true
		}
	}
	return false
}

// abortedAnswer is the answer of a prompt aborted before it ran.
func (s *promptsAPI) abortedAnswer(p *prompt) json.RawMessage {
	return s.emptyAnswer(p, "", "aborted before it ran", true)
}

// emptyAnswer is an assistant message without parts that carries why
// there is no answer. It is not stored.
func (s *promptsAPI) emptyAnswer(p *prompt, parent, msg string, aborted bool) json.RawMessage {
	now := ms(time.Now())
	mid := id.Ascending(id.Message)
	if parent == "" {
		parent = mid
	}
	ref := p.model.ref
	dir := s.dirOfID(p.sid)
	code := ""
	if aborted {
		code = string(event.StopAborted)
	}
	b, _ := json.Marshal(wire.AssistantWithParts{Info: &wire.AssistantMessage{
		ID: mid, SessionID: p.sid, Role: "assistant", Time: wire.AssistantTime{Created: now, Completed: now}, Error: messageError(code, msg),
		ParentID: parent, ModelID: ref.ModelID, ProviderID: ref.ProviderID, Mode: p.node, Agent: p.node,
		Path: wire.MessagePath{Cwd: dir, Root: dir},
	}, Parts: []any{}})
	return b
}

// handleAbort answers POST /session/{id}/abort: it cancels the session's
// run and its queued prompts, waits for the run to wind down (children end
// aborted, the session goes idle) and answers true. A child session that
// runs in its root's run (no prompt of its own; in this process or on the
// pool's engine) is cancelled alone (pool.Pool.Cancel): it and its subtree end aborted, its parent reads
// that the user cancelled it and goes on.
func (s *promptsAPI) handleAbort(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	ctx := r.Context()
	rec, err := s.store.GetSession(ctx, sid)
	if err != nil {
		storeError(w, sid, err)
		return
	}
	own := false
	if st := s.facts.get(rec.ID); st != nil {
		st.mu.Lock()
		own = st.active != nil
		st.mu.Unlock()
	}
	if !own && rec.ParentID != "" && s.pool.Runs(ctx, rec.ID) {
		s.cancelChild(ctx, rec.ID, answeredBy(r))
		writeJSON(w, http.StatusOK, true)
		return
	}
	s.abort(ctx, rec.ID)
	writeJSON(w, http.StatusOK, true)
}

// cancelChild cancels a child session in its root's run and waits (up to
// DefaultAbortWait) for its end. A child that ended meanwhile is fine: the
// answer is the same. by labels who asked, as approvals' answers are
// (answeredBy: the web view's requests are "web").
func (s *promptsAPI) cancelChild(ctx context.Context, sid, by string) {
	done, err := s.pool.Cancel(ctx, sid, by)
	if err != nil {
		s.log.Debug("opencode: cancel a child", "session", sid, "err", err)
		return
	}
	t := time.NewTimer(DefaultAbortWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("opencode: child did not end in time after abort", "session", sid)
	case <-ctx.Done():
	}
}

// abort cancels the run and queued prompts of a session and waits (up to
// DefaultAbortWait) for the run to end.
func (s *promptsAPI) abort(ctx context.Context, sid string) {
	st := s.facts.get(sid)
	if st == nil {
		return
	}
	st.mu.Lock()
	ar := st.active
	if q := st.runs; q != nil {
		q.cancel(errAborted)
		q.gen, q.cancel = context.WithCancelCause(s.runs)
		q.dropWaitingLocked(s.budget)
	}
	st.mu.Unlock()
	if ar == nil {
		return
	}
	t := time.NewTimer(DefaultAbortWait)
	defer t.Stop()
	select {
	case <-ar.done:
	case <-t.C:
		s.log.Warn("opencode: run did not end in time after abort", "session", sid)
	case <-ctx.Done():
	}
}
