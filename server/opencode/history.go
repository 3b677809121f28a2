package opencode

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/sessiontree"
)

// historyAPI serves what a session's transcript answers (its messages,
// its todo list) and rebuilds transcripts from the store.
type historyAPI struct {
	*base
}

// handleMessages answers GET /session/{id}/message: [{info, parts}] in
// order. ?limit=N keeps the last N, ?before=<message id> those before it.
//
// The messages of a session that ran (or was created) in this process are
// the ones its events built, with the same ids. Others (an earlier
// process, or evicted from memory) are rebuilt from the stored
// conversation.
func (s *historyAPI) handleMessages(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sessionID")
	ctx := r.Context()
	rec, err := s.store.GetSession(ctx, sid)
	if err != nil {
		storeError(w, sid, err)
		return
	}
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			badRequest(w, "Query", "limit must be a non-negative integer, got %q", v)
			return
		}
		limit = n
	}
	before := q.Get("before")

	st := s.facts.ensure(sid)
	st.mu.Lock()
	t := s.facts.touch(st, false)
	needPrompt := t != nil && t.cutPrompt != nil
	st.mu.Unlock()
	if needPrompt {
		// A child's prompt arrives cut to 200 bytes in its spawn event; the
		// store has it whole.
		full := firstUserText(ctx, s.store, sid)
		st.mu.Lock()
		if t.cutPrompt != nil {
			if p := t.parts[t.cutPrompt.ID]; p != nil && full != "" && strings.HasPrefix(full, strings.TrimSuffix(t.cutPrompt.Text, "...")) {
				c := *t.cutPrompt
				c.Text = full
				p.set(&c)
			}
			t.cutPrompt = nil
		}
		st.mu.Unlock()
	}
	st.mu.Lock()
	t = s.facts.touch(st, false)
	var headless time.Time
	if t != nil {
		headless = t.headless
	}
	st.mu.Unlock()
	if !headless.IsZero() {
		head := s.storedHead(ctx, rec, headless)
		st.mu.Lock()
		if t.headless.Equal(headless) {
			t.prepend(head)
			t.headless = time.Time{}
		}
		st.mu.Unlock()
	}
	st.mu.Lock()
	if t = s.facts.touch(st, false); t != nil {
		var whole map[*tpart]string
		if want := t.shelvedLocked(t.pick(before, limit)); want != nil {
			// Long prompt texts are kept in the store only (shelf.go).
			st.mu.Unlock()
			whole = unshelve(ctx, s.store, sid, want)
			st.mu.Lock()
		}
		b := t.encode(before, limit, whole)
		st.mu.Unlock()
		writeRaw(w, http.StatusOK, b)
		return
	}
	st.mu.Unlock()
	writeRaw(w, http.StatusOK, s.storeTranscript(ctx, rec).encode(before, limit, nil))
}

func firstUserText(ctx context.Context, st session.Store, sid string) string {
	msgs, err := st.Messages(ctx, sid)
	if err != nil {
		return ""
	}
	for _, m := range msgs {
		if m.Role == model.RoleUser {
			return m.Text()
		}
	}
	return ""
}

// storedHead is the transcript of rec's stored conversation up to its
// last prompt stored before at (a user message of a person): what a
// headless transcript (a run that went on after a restart) lacks.
func (s *historyAPI) storedHead(ctx context.Context, rec session.Session, at time.Time) *transcript {
	msgs, err := s.store.Messages(ctx, rec.ID)
	if err != nil {
		s.log.Warn("opencode: read messages", "session", rec.ID, "err", err)
		return newTranscript()
	}
	end := 0
	for i, m := range msgs {
		if m.Role == model.RoleUser && !m.Synthetic && m.CreatedAt.Before(at) {
			end = i + 1
		}
	}
	if end == 0 {
		return newTranscript()
	}
	rec.Status = session.StatusCompleted // its calls all have their results
	t := s.transcriptOf(ctx, rec, msgs[:end])
	t.shelveStored()
	return t
}

// storeTranscript rebuilds a session's messages from its stored
// conversation: user messages with their text; one assistant message per
// model response (step-start, text, reasoning and tool parts,
// step-finish); tool results folded into their tool part's state, shown
// as the live events show them (tools.go), with the titles, locations,
// diffs and metadata of the session's event log. A spawning tool's
// result ({output, session_id}) links the part to the child (metadata
// sessionId, parentSessionId) and gives the child's output. A team
// session (which keeps no conversation of its own) gets one assistant
// message with a task part per member session.
func (s *historyAPI) storeTranscript(ctx context.Context, rec session.Session) *transcript {
	msgs, err := s.store.Messages(ctx, rec.ID)
	if err != nil {
		s.log.Warn("opencode: read messages", "session", rec.ID, "err", err)
		return newTranscript()
	}
	return s.transcriptOf(ctx, rec, msgs)
}

// transcriptOf is storeTranscript of the stored messages msgs of rec.
func (s *historyAPI) transcriptOf(ctx context.Context, rec session.Session, msgs []session.Message) *transcript {
	t := newTranscript()
	dir := s.dirOf(rec)
	reports, err := sessiontree.ToolReports(ctx, s.store, rec.ID)
	if err != nil {
		s.log.Warn("opencode: read events", "session", rec.ID, "err", err)
	}
	agent := rec.AgentName
	sid := rec.ID
	lastUser := ""
	tools := map[string]*storedCall{}
	for i, m := range msgs {
		mid := m.ID
		if mid == "" {
			mid = derivedID("msg", sid, i)
		}
		created := ms(m.CreatedAt)
		who := m.AgentName
		if who == "" {
			who = agent
		}
		switch m.Role {
		case model.RoleUser:
			tm := &tmsg{user: &wire.UserMessage{ID: mid, SessionID: sid, Role: "user", Time: wire.UserMessageTime{Created: created}, Agent: who, Model: s.modelOf(who)}}
			for k, p := range m.Parts {
				if p.Kind != model.PartText {
					continue
				}
				pid := derivedID("prt", mid, k)
				t.putPart(tm, pid, &wire.TextPart{ID: pid, SessionID: sid, MessageID: mid, Type: "text", Text: p.Text, Synthetic: m.Synthetic}) // no time: see runs.go
			}
			t.add(tm)
			lastUser = mid
		case model.RoleAssistant:
			parent := lastUser
			if parent == "" {
				parent = mid
			}
			ref := s.modelOf(who)
			a := &wire.AssistantMessage{ID: mid, SessionID: sid, Role: "assistant", Time: wire.AssistantTime{Created: created, Completed: created},
				ParentID: parent, ModelID: ref.ModelID, ProviderID: ref.ProviderID, Mode: who, Agent: who, Path: wire.MessagePath{Cwd: dir, Root: dir}, Finish: "stop"}
			tm := &tmsg{asst: a, finished: true}
			n := 0
			next := func() string { n++; return derivedID("prt", mid, n) }
			pid := next()
			t.putPart(tm, pid, &wire.StepStartPart{ID: pid, SessionID: sid, MessageID: mid, Type: "step-start"})
			for _, p := range m.Parts {
				pid := next()
				switch p.Kind {
				case model.PartText:
					t.putPart(tm, pid, &wire.TextPart{ID: pid, SessionID: sid, MessageID: mid, Type: "text", Text: p.Text, Time: &wire.PartTime{Start: created, End: created}})
				case model.PartThinking:
					t.putPart(tm, pid, &wire.ReasoningPart{ID: pid, SessionID: sid, MessageID: mid, Type: "reasoning", Text: p.Text, Time: wire.PartTime{Start: created, End: created}})
				case model.PartToolCall:
					sc := &storedCall{name: p.ToolName, args: p.Args, report: reports[p.ToolCallID]}
					v := viewTool(s.root, sc.call(nil), p.Args)
					t.putPart(tm, pid, &wire.ToolPart{ID: pid, SessionID: sid, MessageID: mid, Type: "tool", CallID: p.ToolCallID, Tool: v.tool,
						State: &wire.ToolStateRunning{Status: "running", Input: v.input, Title: v.title, Time: wire.ToolTimeStart{Start: created}}})
					sc.tp = t.parts[pid]
					tools[p.ToolCallID] = sc
					a.Finish = "tool-calls"
				}
			}
			pid = next()
			t.putPart(tm, pid, &wire.StepFinishPart{ID: pid, SessionID: sid, MessageID: mid, Type: "step-finish", Reason: a.Finish, Tokens: tokens(0, 0, 0, 0, 0)})
			t.add(tm)
		case model.RoleTool:
			for _, p := range m.Parts {
				if p.Kind != model.PartToolResult {
					continue
				}
				sc, ok := tools[p.ToolCallID]
				if !ok {
					continue
				}
				s.foldResult(sc, p, created)
				delete(tools, p.ToolCallID)
			}
		}
	}
	var tm timing
	if recs, err := s.store.Events(ctx, rec.ID, 0); err == nil {
		tm = timingOf(recs)
	}
	// Calls that never got their result.
	if rec.Status != session.StatusRunning {
		for callID, sc := range tools {
			s.unfinished(ctx, sc, tm.spawned[callID], rec)
		}
	}
	if len(msgs) == 0 && !s.isAgent(rec.AgentName) {
		s.teamMessages(ctx, t, rec, dir)
	} else {
		t.applyTiming(tm, rec, func(agent, modelID string) wire.ModelRef { return refOfModelID(s.base, agent, modelID) })
	}
	return t
}

// isAgent says whether the pool's node name is an agent (which keeps its
// conversation), not a team. An agent's session without messages (one
// reverted to its first prompt) shows none: its children stay listed
// as children, but no task part of a turn that is gone links them.
func (s *historyAPI) isAgent(name string) bool {
	n, ok := s.pool.Node(name)
	return ok && n.SourceType() == event.SourceAgent
}

// seed fills the transcript of a session that has none in memory (one
// from an earlier process, or evicted) from the store, so that a new run
// continues the messages a client has seen.
func (s *historyAPI) seed(ctx context.Context, sid string) {
	st := s.facts.ensure(sid)
	st.mu.Lock()
	ok := st.trans != nil
	st.mu.Unlock()
	if ok {
		return
	}
	rec, err := s.store.GetSession(ctx, sid)
	if err != nil {
		return
	}
	t := s.storeTranscript(ctx, rec)
	t.shelveStored()
	st.mu.Lock()
	s.facts.keep(st, t)
	st.mu.Unlock()
}

// storedCall is a tool call of a stored conversation: its part, and what
// the event log says of it.
type storedCall struct {
	tp     *tpart
	name   string
	args   json.RawMessage
	report sessiontree.ToolReport
}

// call is the call for the tool mapping, finished with res when it is
// not nil.
func (sc *storedCall) call(res *model.Part) *toolCall {
	r := sc.report
	c := &toolCall{name: sc.name, title: r.Title, locations: r.Locations}
	if res != nil {
		c.done, c.isError, c.output = true, res.IsError, res.Text
		c.diffs, c.meta = r.Diffs, r.Metadata
	}
	return c
}

// foldResult completes a tool part with its result.
func (s *historyAPI) foldResult(sc *storedCall, res model.Part, at int64) {
	tp := sc.tp
	part := tp.cur.(*wire.ToolPart)
	run := part.State.(*wire.ToolStateRunning)
	c := *part
	v := viewTool(s.root, sc.call(&res), sc.args)
	var linked struct {
		SessionID string `json:"session_id"`
	}
	var link map[string]any
	out := res.Text
	if json.Unmarshal([]byte(res.Text), &linked) == nil && linked.SessionID != "" {
		link = map[string]any{"sessionId": linked.SessionID, "parentSessionId": part.SessionID}
		out = childOutput(res.Text)
		if v.tool != "task" {
			v = asTask(v, sc.name, sc.args)
			c.Tool = "task"
		}
	}
	meta := withMeta(v.meta, link)
	if res.IsError {
		c.State = &wire.ToolStateError{Status: "error", Input: v.input, Error: out, Metadata: meta, Time: wire.ToolTime{Start: run.Time.Start, End: at}}
	} else {
		if meta == nil {
			meta = map[string]any{}
		}
		title := v.title
		if title == "" {
			title = v.tool
		}
		c.State = &wire.ToolStateCompleted{Status: "completed", Input: v.input, Output: out, Title: title, Metadata: meta, Time: wire.ToolTime{Start: run.Time.Start, End: at}}
	}
	tp.set(&c)
}

// teamMessages gives a session without a conversation of its own (a
// team) one assistant message with a task part per child session.
func (s *historyAPI) teamMessages(ctx context.Context, t *transcript, rec session.Session, dir string) {
	kids, err := s.store.ListSessions(ctx, session.ListOptions{ParentID: rec.ID})
	if err != nil || len(kids) == 0 {
		return
	}
	slices.Reverse(kids) // oldest first
	sid := rec.ID
	mid := derivedID("msg", sid, 0)
	created := ms(rec.CreatedAt)
	ref := s.modelOf(rec.AgentName)
	a := &wire.AssistantMessage{ID: mid, SessionID: sid, Role: "assistant", Time: wire.AssistantTime{Created: created, Completed: ms(rec.UpdatedAt)},
		ParentID: mid, ModelID: ref.ModelID, ProviderID: ref.ProviderID, Mode: rec.AgentName, Agent: rec.AgentName,
		Path: wire.MessagePath{Cwd: dir, Root: dir}, Finish: "stop"}
	tm := &tmsg{asst: a, finished: true}
	pid := derivedID("prt", mid, 0)
	t.putPart(tm, pid, &wire.StepStartPart{ID: pid, SessionID: sid, MessageID: mid, Type: "step-start"})
	for i, k := range kids {
		pid := derivedID("prt", mid, i+1)
		desc, _, _ := strings.Cut(k.Title, " (@")
		input, _ := json.Marshal(map[string]string{"description": desc, "subagent_type": k.AgentName})
		meta := map[string]any{"sessionId": k.ID, "parentSessionId": sid, "spawnMechanism": string(event.MechanismSpawn)}
		start, end := ms(k.CreatedAt), ms(k.UpdatedAt)
		var st any
		switch k.Status {
		case session.StatusRunning:
			st = &wire.ToolStateRunning{Status: "running", Input: input, Title: desc, Metadata: meta, Time: wire.ToolTimeStart{Start: start}}
		case session.StatusCompleted, session.StatusIdle:
			out := lastAssistantText(ctx, s.store, k.ID)
			st = &wire.ToolStateCompleted{Status: "completed", Input: input, Output: out, Title: desc, Metadata: meta, Time: wire.ToolTime{Start: start, End: end}}
		default:
			msg, _ := k.Metadata["error"].(string)
			if msg == "" {
				msg = string(k.StopReason)
			}
			if msg == "" {
				msg = string(k.Status)
			}
			st = &wire.ToolStateError{Status: "error", Input: input, Error: msg, Metadata: meta, Time: wire.ToolTime{Start: start, End: end}}
		}
		t.putPart(tm, pid, &wire.ToolPart{ID: pid, SessionID: sid, MessageID: mid, Type: "tool", CallID: "spawn:" + k.ID, Tool: "task", State: st})
	}
	pid = derivedID("prt", mid, len(kids)+1)
	t.putPart(tm, pid, &wire.StepFinishPart{ID: pid, SessionID: sid, MessageID: mid, Type: "step-finish", Reason: "stop", Tokens: tokens(0, 0, 0, 0, 0)})
	t.add(tm)
}

func lastAssistantText(ctx context.Context, st session.Store, sid string) string {
	msgs, err := st.Messages(ctx, sid)
	if err != nil {
		return ""
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleAssistant {
			if txt := msgs[i].Text(); txt != "" {
				return txt
			}
		}
	}
	return ""
}
