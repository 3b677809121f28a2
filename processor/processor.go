package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/session"
)

// Processor is the session-tree projection. Use New.
type Processor struct {
	store session.Store
	log   *slog.Logger

	mu       sync.Mutex
	sessions map[string]*sess // sessions of root runs still in progress
	// trees lists, per root (owner), the sessions created under it, so that
	// a finished run's projection can be released.
	trees map[string][]string
	// done holds the ids of children whose run has finished and whose
	// projection was released: the duplicate guard, for the last
	// maxDone of them (doneRing keeps their order, doneNext is the
	// oldest's slot), so that a long-running server does not keep an id
	// per child forever.
	done     map[string]struct{}
	doneRing []string
	doneNext int

	scratch applier // reused by every apply, under mu

	// lean holds the root runs in progress that are recorded without a
	// projection, by owner (see lean.go); free keeps released ones for
	// reuse. Both under mu. A Stream keeps its run's leanRun and records
	// into it without a lock (see stream.go).
	lean map[string]*leanRun
	free []*leanRun

	subMu   sync.RWMutex
	nsubs   atomic.Int32 // len(subs), read without subMu on every event
	subs    map[int]func(owner string, cs []Change)
	nextSub int
}

// New returns a processor that persists into store (nil: projection only)
// and logs to log (nil: nowhere).
func New(store session.Store, log *slog.Logger) *Processor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Processor{store: store, log: log, sessions: map[string]*sess{}, trees: map[string][]string{}, done: map[string]struct{}{},
		lean: map[string]*leanRun{}, subs: map[int]func(string, []Change){}}
}

// Store returns the processor's store (nil when it has none).
func (p *Processor) Store() session.Store { return p.store }

// Subscribe calls fn with the Changes of every later Apply and of every
// later Record of a projected root run, after the call has released its
// lock: the runs whose first event comes after Subscribe (and runs already
// projected), not runs that started lean. fn gets its own copy of the
// Changes and must not call Apply or Record. The returned function
// unsubscribes.
func (p *Processor) Subscribe(fn func(owner string, cs []Change)) (unsubscribe func()) {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	n := p.nextSub
	p.nextSub++
	p.subs[n] = fn
	p.nsubs.Store(int32(len(p.subs)))
	return func() {
		p.subMu.Lock()
		defer p.subMu.Unlock()
		delete(p.subs, n)
		p.nsubs.Store(int32(len(p.subs)))
	}
}

// Session returns the record of a session: the live projection while its
// root run is in progress and projected, else the store's record (a lean
// run, or a run that has ended and whose projection was released).
func (p *Processor) Session(id string) (session.Session, bool) {
	p.mu.Lock()
	s, ok := p.sessions[id]
	var rec session.Session
	if ok {
		rec = s.info()
	}
	p.mu.Unlock()
	if ok {
		return rec, true
	}
	if p.store == nil {
		return session.Session{}, false
	}
	rec, err := p.store.GetSession(context.Background(), id)
	return rec, err == nil
}

// Apply projects one event of the stream owned by the root session owner
// and returns what changed. See the package documentation. Apply always
// projects: a lean root run that gets an event through Apply is projected
// from that event on.
func (p *Processor) Apply(ctx context.Context, owner string, e event.Event) []Change {
	if e == nil {
		return nil
	}
	out, _ := p.apply(ctx, owner, e, true)
	return out
}

// Record takes one event like Apply but returns nothing. A root run whose
// first event finds no subscriber is lean: Record does only the store
// work for it, with no projection and no Changes. A projected run (one
// that started while someone subscribed) is projected as by Apply, and
// its Changes are built only while a subscriber is listening. A caller
// that records a whole run should use a Stream, which does the same
// without a lock per event of a lean run.
func (p *Processor) Record(ctx context.Context, owner string, e event.Event) {
	if e == nil {
		return
	}
	p.apply(ctx, owner, e, false)
}

// apply takes one event under p.mu. For Record (ret false) of a lean run
// it returns the run's lean state while the run goes on (nil once it
// ended), for a Stream to keep.
func (p *Processor) apply(ctx context.Context, owner string, e event.Event, ret bool) ([]Change, *leanRun) {
	subscribed := p.nsubs.Load() > 0
	p.mu.Lock()
	if lr, ok := p.lean[owner]; ok {
		if !ret {
			lr = p.record(ctx, owner, lr, e, true)
			p.mu.Unlock()
			return nil, lr
		}
		// Apply always projects: the run is projected from here on.
		p.dropLean(owner, lr)
	} else if _, projected := p.trees[owner]; !ret && !subscribed && !projected {
		// The first event of a root run that nobody watches: lean.
		lr := p.record(ctx, owner, nil, e, true)
		p.mu.Unlock()
		return nil, lr
	}
	// One applier is reused under p.mu: no allocation per event.
	a := &p.scratch
	*a = applier{p: p, ctx: ctx, owner: owner, want: ret || subscribed, out: a.out[:0]}
	a.apply(e)
	var out []Change
	if len(a.out) > 0 {
		// Changes are snapshots (they share nothing with the projection);
		// this copy is the caller's or, without one, the last
		// subscriber's; the others get deep copies, made before it is
		// handed over.
		out = append([]Change(nil), a.out...)
	}
	clear(a.out)
	a.ctx = nil
	p.mu.Unlock()
	if subscribed && len(out) > 0 {
		p.subMu.RLock()
		i, n := 0, len(p.subs)
		for _, fn := range p.subs {
			if i++; i == n && !ret {
				fn(owner, out)
				continue
			}
			fn(owner, cloneChanges(out))
		}
		p.subMu.RUnlock()
	}
	if !ret {
		return nil, nil
	}
	return out, nil
}

// sess is the projection of one session.
type sess struct {
	rec     session.Session
	parent  *sess
	link    *part            // the tool part in the parent that points here
	kids    map[string]*sess // children that have not ended
	tools   map[string]*part // open tool parts by call id
	msg     *message         // the open assistant message
	userMsg string           // the last user message
	ended   bool
	errored bool              // a session error was reported for the current run
	created bool              // the processor created the store record (fallback)
	plan    []event.PlanEntry // the latest plan_update the projection saw (report.go)
	planned bool              // plan is known
}

func (s *sess) info() session.Session {
	r := s.rec
	r.Metadata = session.CloneMetadata(r.Metadata)
	return r
}

type message struct {
	info    Message
	byIndex []*part // by event part index (small, dense); see part
	last    int     // highest part index seen, -1 before any
	parts   []*part
}

// part returns the part with event index i.
func (m *message) part(i int) (*part, bool) {
	if i < 0 || i >= len(m.byIndex) || m.byIndex[i] == nil {
		return nil, false
	}
	return m.byIndex[i], true
}

// setPart records the part with event index i. Indexes come from one
// model response and are small; a hostile index is bounded.
func (m *message) setPart(i int, pt *part) {
	if i < 0 || i > 1<<16 {
		return
	}
	for len(m.byIndex) <= i {
		m.byIndex = append(m.byIndex, nil)
	}
	m.byIndex[i] = pt
}

// addKid and addTool make the maps on first use: most sessions never
// spawn, many never call a tool.
func (s *sess) addKid(id string, c *sess) {
	if s.kids == nil {
		s.kids = map[string]*sess{}
	}
	s.kids[id] = c
}

func (s *sess) addTool(callID string, pt *part) {
	if s.tools == nil {
		s.tools = map[string]*part{}
	}
	s.tools[callID] = pt
}

type part struct {
	Part
	text strings.Builder
	raw  strings.Builder
}

func (pt *part) snapshot() Part {
	c := pt.Part
	c.Text = pt.text.String()
	c.State.Raw = pt.raw.String()
	c.State.Metadata = maps.Clone(pt.State.Metadata)
	cloneReport(&c.State)
	return c
}

func (pt *part) open() bool {
	return pt.Type == PartTool && (pt.State.Status == ToolPending || pt.State.Status == ToolRunning)
}

// applier carries one Apply call.
type applier struct {
	p     *Processor
	ctx   context.Context
	owner string
	now   time.Time
	want  bool // build Changes (someone reads them)
	out   []Change
	one   [1]event.Event // backing array for a one-event store append
}

func (a *applier) emit(c Change) { a.out = append(a.out, c) }

// clock returns the time of the event being applied, read once and only
// when something needs it (most deltas do not).
func (a *applier) clock() time.Time {
	if a.now.IsZero() {
		a.now = time.Now()
	}
	return a.now
}

// store appends one event to the log of session sid.
func (a *applier) store(sid string, inner event.Event) {
	st := a.p.store
	if st == nil {
		return
	}
	a.one[0] = inner
	err := st.AppendEvents(a.ctx, sid, a.one[:]...)
	a.one[0] = nil
	if err != nil {
		a.p.log.Warn("processor: store event", "session", sid, "kind", inner.Kind(), "err", err)
	}
}

func (a *applier) apply(e event.Event) {
	sid, inner := event.Unwrap(a.owner, e)
	var wrap *event.Subagent
	if w, ok := e.(event.Subagent); ok {
		wrap = &w
		if inner == nil {
			a.p.log.Warn("processor: subagent event wraps nothing", "owner", a.owner, "child", sid)
			return
		}
	}
	if sid == "" {
		a.p.log.Warn("processor: event without a session", "kind", e.Kind())
		return
	}
	if _, released := a.p.done[sid]; released {
		if sid != a.owner {
			// A late or replayed event of a child whose run already ended:
			// kept in its log, but it changes nothing in the projection.
			a.p.log.Debug("processor: event of an ended child", "child", sid, "kind", inner.Kind())
			a.store(sid, inner)
			return
		}
		// A session that ran as a child, now continued as a root run of
		// its own (a resumed session): a new run, projected afresh.
		delete(a.p.done, sid)
	}
	s := a.session(sid, wrap)
	a.store(sid, inner)
	switch ev := inner.(type) {
	case event.RunStarted:
		a.runStarted(s, ev)
	case event.PartStart:
		a.partStart(s, ev)
	case event.PartDelta:
		a.partDelta(s, ev)
	case event.PartEnd:
		a.partEnd(s, ev)
	case event.ToolCallStart:
		a.toolStart(s, ev)
	case event.ToolCallProgress:
		a.toolProgress(s, ev)
	case event.ToolCallComplete:
		a.toolComplete(s, ev)
	case event.PlanUpdate:
		a.planUpdate(s, ev)
	case event.StreamComplete:
		a.streamComplete(s, ev)
	case event.RunError:
		a.runError(s, ev)
	case event.SpawnSessionStart:
		a.spawnStart(s, ev)
	case event.SpawnSessionEnd:
		a.spawnEnd(s, ev)
	}
}

// session returns the projection of sid, creating it when first seen: a
// root from the store (or new), a child through the reactive fallback.
func (a *applier) session(sid string, wrap *event.Subagent) *sess {
	if s, ok := a.p.sessions[sid]; ok {
		return s
	}
	if sid == a.owner || wrap == nil {
		return a.root(sid)
	}
	a.p.log.Warn("processor: event of a child without spawn_session_start; creating it (reactive fallback)",
		"owner", a.owner, "child", sid, "kind", wrap.Event.Kind())
	parent := a.session(a.owner, nil)
	path := wrap.Path
	if len(path) == 0 || path[len(path)-1] != sid {
		path = []string{sid}
		if pp, ok := a.p.sessions[wrap.ParentSessionID]; ok {
			parent = pp
		}
	}
	for _, cid := range path {
		if c, ok := a.p.sessions[cid]; ok {
			parent = c
			continue
		}
		info := spawnInfo{child: cid, depth: parent.rec.Depth + 1, mechanism: event.MechanismManual, runMode: event.RunModeSync}
		if cid == sid {
			info.sourceName, info.sourceType, info.depth, info.toolCallID = wrap.SourceName, wrap.SourceType, wrap.Depth, wrap.ToolCallID
		}
		parent = a.createChild(parent, info)
	}
	return parent
}

// root loads a root session from the store, or creates it.
func (a *applier) root(sid string) *sess {
	s := &sess{}
	a.p.sessions[sid] = s
	a.p.trees[sid] = append(a.p.trees[sid], sid)
	if st := a.p.store; st != nil {
		rec, err := st.GetSession(a.ctx, sid)
		if err == nil {
			s.rec = rec
			return s
		}
		if !errors.Is(err, session.ErrNotFound) {
			a.p.log.Warn("processor: load session", "session", sid, "err", err)
		}
	}
	s.rec = session.Session{ID: sid, Status: session.StatusRunning, SourceType: event.SourceAgent, CreatedAt: a.clock(), UpdatedAt: a.clock()}
	if st := a.p.store; st != nil {
		if err := st.CreateSession(a.ctx, s.rec); err != nil && !errors.Is(err, session.ErrExists) {
			a.p.log.Warn("processor: create session", "session", sid, "err", err)
		}
		s.created = true
	}
	if a.want {
		a.emit(SessionCreated{Info: s.info()})
	}
	return s
}

type spawnInfo struct {
	child, toolCallID, mechanism, runMode, sourceName, sourceType string
	description, prompt, modelID, taskID                          string
	depth                                                         int
}

// childRecord is the store record the processor creates for a child that
// is not in the store (the record spawn.Spawn would have written).
func childRecord(info spawnInfo, parentID string, now time.Time) session.Session {
	title := info.description
	if title == "" {
		title = info.sourceName
	}
	return session.Session{
		ID: info.child, ParentID: parentID, Depth: info.depth, AgentName: info.sourceName, SourceType: info.sourceType,
		Title: fmt.Sprintf("%s (@%s subagent)", title, info.sourceName), Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now,
	}
}

// createChild adds a child session to the projection (and to the store
// when it is not there), with its prompt, an open assistant message and
// the part in the parent that points at it.
func (a *applier) createChild(parent *sess, info spawnInfo) *sess {
	c := &sess{parent: parent}
	a.p.sessions[info.child] = c
	a.p.trees[a.owner] = append(a.p.trees[a.owner], info.child)
	parent.addKid(info.child, c)
	var rec session.Session
	found := false
	if st := a.p.store; st != nil {
		r, err := st.GetSession(a.ctx, info.child)
		switch {
		case err == nil:
			rec, found = r, true
		case !errors.Is(err, session.ErrNotFound):
			a.p.log.Warn("processor: load session", "session", info.child, "err", err)
		}
	}
	if !found {
		rec = childRecord(info, parent.rec.ID, a.clock())
		if st := a.p.store; st != nil {
			if err := st.CreateSession(a.ctx, rec); err != nil && !errors.Is(err, session.ErrExists) {
				a.p.log.Warn("processor: create session", "session", info.child, "err", err)
			}
			c.created = true
		}
	}
	c.rec = rec
	if a.want {
		a.emit(SessionCreated{Info: c.info()})
	}
	if info.prompt != "" {
		um := Message{ID: id.Ascending(id.Message), SessionID: c.rec.ID, Role: RoleUser, Agent: c.rec.AgentName, Created: a.clock(), Completed: a.clock()}
		c.userMsg = um.ID
		if a.want {
			a.emit(MessageUpdated{Info: um})
		}
		pt := &part{Part: Part{ID: id.Ascending(id.Part), SessionID: c.rec.ID, MessageID: um.ID, Type: PartText, Start: a.clock(), End: a.clock()}}
		pt.text.WriteString(info.prompt)
		if a.want {
			a.emit(PartUpdated{Part: pt.snapshot()})
		}
	}
	a.openMessage(c, info.modelID)
	a.link(parent, c, info)
	return c
}

// link points a tool part of the parent at child c: the tool call that
// spawned it when there is one, else a new task-like part.
func (a *applier) link(parent, c *sess, info spawnInfo) {
	var pt *part
	if info.toolCallID != "" {
		if t, ok := parent.tools[info.toolCallID]; ok && t.open() && t.Child() == "" {
			pt = t
		}
	}
	if pt == nil {
		m := a.ensureMessage(parent)
		input, _ := json.Marshal(map[string]string{"description": info.description, "prompt": info.prompt, "subagent_type": info.sourceName})
		title := info.description
		if title == "" {
			title = info.sourceName
		}
		pt = a.newPart(parent, m, PartTool)
		pt.CallID, pt.Tool = "spawn:"+c.rec.ID, "task"
		pt.State = ToolState{Status: ToolRunning, Input: input, Title: title, Start: a.clock()}
		parent.addTool(pt.CallID, pt)
	} else if pt.State.Status == ToolPending {
		pt.State.Status, pt.State.Start = ToolRunning, a.clock()
	}
	meta := map[string]any{"sessionId": c.rec.ID, "parentSessionId": parent.rec.ID}
	if info.mechanism != "" {
		meta["spawnMechanism"] = info.mechanism
	}
	if info.runMode != "" {
		meta["runMode"] = info.runMode
	}
	if info.taskID != "" {
		meta["taskId"] = info.taskID
	}
	for k, v := range pt.State.Metadata {
		if _, set := meta[k]; !set {
			meta[k] = v
		}
	}
	pt.State.Metadata = meta
	c.link = pt
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

func (a *applier) openMessage(s *sess, modelID string) *message {
	if s.msg != nil {
		a.closeMessage(s, "")
	}
	m := &message{info: Message{ID: id.Ascending(id.Message), SessionID: s.rec.ID, Role: RoleAssistant, ParentID: s.userMsg,
		Agent: s.rec.AgentName, ModelID: modelID, Created: a.clock()}, last: -1}
	s.msg = m
	if a.want {
		a.emit(MessageUpdated{Info: m.info})
	}
	return m
}

func (a *applier) ensureMessage(s *sess) *message {
	if s.msg != nil {
		return s.msg
	}
	return a.openMessage(s, "")
}

// closeMessage completes the open message; text parts still open end.
func (a *applier) closeMessage(s *sess, errText string) {
	m := s.msg
	if m == nil {
		return
	}
	for _, pt := range m.parts {
		if pt.Type != PartTool && pt.End.IsZero() {
			pt.End = a.clock()
			if a.want {
				a.emit(PartUpdated{Part: pt.snapshot()})
			}
		}
	}
	if errText != "" && m.info.Error == "" {
		m.info.Error = errText
	}
	m.info.Completed = a.clock()
	if a.want {
		a.emit(MessageUpdated{Info: m.info})
	}
	s.msg = nil
}

func (a *applier) newPart(s *sess, m *message, t PartType) *part {
	pt := &part{Part: Part{ID: id.Ascending(id.Part), SessionID: s.rec.ID, MessageID: m.info.ID, Type: t, Start: a.clock()}}
	m.parts = append(m.parts, pt)
	return pt
}

func (a *applier) setStatus(s *sess, st session.Status) {
	if s.rec.Status == st {
		return
	}
	s.rec.Status = st
	s.rec.UpdatedAt = a.clock()
	if a.want {
		a.emit(SessionUpdated{Info: s.info()})
	}
}

func (a *applier) runStarted(s *sess, ev event.RunStarted) {
	if s.ended {
		// A new run of a session that ended (a resumed session).
		s.ended, s.errored = false, false
		if s.parent != nil {
			s.parent.addKid(s.rec.ID, s)
		}
	}
	if s.rec.AgentName == "" {
		s.rec.AgentName = ev.AgentName
	}
	s.errored = false
	if s.parent == nil {
		s.rec.StopReason = ""
		s.rec.Status = ""
	}
	a.setStatus(s, session.StatusRunning)
}

// partKind maps an event part kind to a projection part type.
func partKind(k string) PartType {
	switch k {
	case event.PartThinking:
		return PartReasoning
	case event.PartToolCall:
		return PartTool
	}
	return PartText
}

func (a *applier) partStart(s *sess, ev event.PartStart) {
	m := s.msg
	if m == nil || ev.Index <= m.last {
		// Part indexes start again at 0 with each model response: a new
		// assistant message (a new step).
		modelID := ""
		if m != nil {
			modelID = m.info.ModelID
		}
		m = a.openMessage(s, modelID)
	}
	m.last = ev.Index
	pt := a.newPart(s, m, partKind(ev.Part.PartKind))
	m.setPart(ev.Index, pt)
	if pt.Type == PartTool {
		pt.CallID, pt.Tool = ev.Part.ToolCallID, ev.Part.ToolName
		pt.State = ToolState{Status: ToolPending, Input: json.RawMessage("{}")}
		pt.raw.WriteString(ev.Part.Args)
		if pt.CallID != "" {
			s.addTool(pt.CallID, pt)
		}
	} else {
		pt.text.WriteString(ev.Part.Content)
	}
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

func (a *applier) partDelta(s *sess, ev event.PartDelta) {
	m := a.ensureMessage(s)
	pt, ok := m.part(ev.Index)
	if !ok {
		// A delta without its start: open the part now.
		a.partStart(s, event.PartStart{Index: ev.Index, Part: event.Part{PartKind: ev.Delta.PartDeltaKind, ToolCallID: ev.Delta.ToolCallID}})
		m = s.msg
		if pt, ok = m.part(ev.Index); !ok {
			return // an index out of any sane range: nothing to extend
		}
	}
	if pt.Type == PartTool {
		if ev.Delta.ArgsDelta == "" {
			return
		}
		pt.raw.WriteString(ev.Delta.ArgsDelta)
		if a.want {
			a.emit(PartUpdated{Part: pt.snapshot()})
		}
		return
	}
	if ev.Delta.ContentDelta == "" {
		return
	}
	pt.text.WriteString(ev.Delta.ContentDelta)
	if a.want {
		a.emit(PartDelta{SessionID: s.rec.ID, MessageID: pt.MessageID, PartID: pt.ID, Field: "text", Delta: ev.Delta.ContentDelta})
	}
}

func (a *applier) partEnd(s *sess, ev event.PartEnd) {
	if s.msg == nil {
		return
	}
	pt, ok := s.msg.part(ev.Index)
	if !ok {
		return
	}
	if pt.Type == PartTool {
		if raw := pt.raw.String(); json.Valid([]byte(raw)) {
			pt.State.Input = json.RawMessage(raw)
		}
	} else {
		pt.End = a.clock()
	}
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

// toolPart finds the tool part of a call, creating it when the stream
// never announced it.
func (a *applier) toolPart(s *sess, callID, name string) *part {
	if pt, ok := s.tools[callID]; ok {
		return pt
	}
	pt := a.newPart(s, a.ensureMessage(s), PartTool)
	pt.CallID, pt.Tool = callID, name
	pt.State = ToolState{Status: ToolPending, Input: json.RawMessage("{}")}
	s.addTool(callID, pt)
	return pt
}

func (a *applier) toolStart(s *sess, ev event.ToolCallStart) {
	pt := a.toolPart(s, ev.ToolCallID, ev.ToolName)
	if !pt.open() {
		return
	}
	pt.State.Status = ToolRunning
	if len(ev.RawInput) > 0 {
		pt.State.Input = append(json.RawMessage(nil), ev.RawInput...)
	}
	pt.State.Title = ev.Title
	if len(ev.Locations) > 0 {
		pt.State.Locations = ev.Locations
	}
	if pt.State.Start.IsZero() {
		pt.State.Start = a.clock()
	}
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

func (a *applier) toolProgress(s *sess, ev event.ToolCallProgress) {
	pt, ok := s.tools[ev.ToolCallID]
	if !ok || !pt.open() {
		return
	}
	if ev.Title != "" {
		pt.State.Title = ev.Title
	}
	if ev.Status == event.StatusInProgress && pt.State.Status == ToolPending {
		pt.State.Status, pt.State.Start = ToolRunning, a.clock()
	}
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

func (a *applier) toolComplete(s *sess, ev event.ToolCallComplete) {
	pt := a.toolPart(s, ev.ToolCallID, ev.ToolName)
	if len(ev.ToolInput) > 0 {
		pt.State.Input = append(json.RawMessage(nil), ev.ToolInput...)
	}
	if pt.State.Start.IsZero() {
		pt.State.Start = a.clock()
	}
	if ev.IsError {
		pt.State.Status, pt.State.Error, pt.State.Output = ToolError, ev.ToolResult, ""
	} else {
		pt.State.Status, pt.State.Output, pt.State.Error = ToolCompleted, ev.ToolResult, ""
	}
	if pt.State.Title == "" {
		pt.State.Title = ev.ToolName
	}
	toolReport(&pt.State, ev)
	pt.State.End = a.clock()
	delete(s.tools, ev.ToolCallID)
	if a.want {
		a.emit(PartUpdated{Part: pt.snapshot()})
	}
}

func (a *applier) streamComplete(s *sess, ev event.StreamComplete) {
	m := a.ensureMessage(s)
	m.info.Usage, m.info.Cost, m.info.Finish = ev.Message.Usage, ev.Message.Cost, ev.Message.FinishReason
	if ev.Message.Model != "" {
		m.info.ModelID = ev.Message.Model
	}
	a.closeMessage(s, "")
	if s.parent == nil {
		a.finish(s, finishInfo{stop: event.StopCompleted, output: ev.Message.Content})
		a.release(s)
	}
}

// maxDone bounds the duplicate guard: ids of this many ended children are
// kept (about 100 bytes each).
const maxDone = 1 << 16

// markDone adds id to the duplicate guard, forgetting the oldest id when
// the guard is full. Under p.mu. (An id taken out of done, a child resumed
// as a root, may stay in the ring; if it ends again, its older slot's
// eviction forgets it early, which only shortens its guard.)
func (p *Processor) markDone(id string) {
	if _, ok := p.done[id]; ok {
		return
	}
	if len(p.doneRing) < maxDone {
		p.doneRing = append(p.doneRing, id)
	} else {
		delete(p.done, p.doneRing[p.doneNext])
		p.doneRing[p.doneNext] = id
		p.doneNext = (p.doneNext + 1) % maxDone
	}
	p.done[id] = struct{}{}
}

// release drops the projection of a finished root run and of every
// session under it; ended children stay known to the duplicate guard. A
// later run of the same root (a resumed session) starts from the store.
func (a *applier) release(root *sess) {
	if root.parent != nil || a.owner != root.rec.ID {
		return
	}
	for _, id := range a.p.trees[a.owner] {
		if id != a.owner {
			a.p.markDone(id)
		}
		delete(a.p.sessions, id)
	}
	delete(a.p.trees, a.owner)
}

func (a *applier) runError(s *sess, ev event.RunError) {
	a.ensureMessage(s)
	a.closeMessage(s, ev.Message)
	if !s.errored {
		s.errored = true
		if a.want {
			a.emit(SessionError{SessionID: s.rec.ID, Code: ev.Code, Message: ev.Message})
		}
	}
	if s.parent == nil {
		stop := event.StopError
		if ev.Code == event.StopAborted {
			stop = event.StopAborted
		}
		a.finish(s, finishInfo{stop: stop, err: ev.Message})
		a.release(s)
	}
}

func (a *applier) spawnStart(parent *sess, ev event.SpawnSessionStart) {
	if ev.ChildSessionID == "" {
		return
	}
	_, seen := a.p.sessions[ev.ChildSessionID]
	if _, released := a.p.done[ev.ChildSessionID]; seen || released {
		a.p.log.Debug("processor: duplicate spawn_session_start ignored", "child", ev.ChildSessionID)
		return
	}
	prompt, _ := ev.Metadata["prompt"].(string)
	a.createChild(parent, spawnInfo{
		child: ev.ChildSessionID, toolCallID: ev.ToolCallID, mechanism: ev.SpawnMechanism, runMode: ev.RunMode,
		sourceName: ev.SourceName, sourceType: ev.SourceType, description: ev.Description, prompt: prompt,
		modelID: ev.ModelID, taskID: ev.TaskID, depth: ev.Depth,
	})
}

func (a *applier) spawnEnd(parent *sess, ev event.SpawnSessionEnd) {
	c, ok := a.p.sessions[ev.ChildSessionID]
	if !ok {
		if _, released := a.p.done[ev.ChildSessionID]; released || ev.ChildSessionID == "" {
			return
		}
		a.p.log.Warn("processor: spawn_session_end of a child without spawn_session_start; creating it (reactive fallback)",
			"owner", a.owner, "child", ev.ChildSessionID)
		c = a.createChild(parent, spawnInfo{child: ev.ChildSessionID, toolCallID: ev.ToolCallID, sourceName: ev.SourceName,
			sourceType: ev.SourceType, depth: ev.Depth})
	}
	if c.ended {
		a.p.log.Debug("processor: duplicate spawn_session_end ignored", "child", ev.ChildSessionID)
		return
	}
	a.finish(c, finishInfo{stop: ev.StopReason, err: ev.Error, output: ev.LastAssistantMessage, usage: ev.Usage,
		cost: ev.Cost, durationMS: ev.DurationMS, final: true})
}

type finishInfo struct {
	stop, err, output string
	usage             *event.Usage
	cost              float64
	durationMS        int64
	final             bool // the values are the session's final totals (spawn_session_end)
}

// finish ends a session: its open children, tool parts and message, its
// record, and the part in its parent that points at it.
func (a *applier) finish(s *sess, f finishInfo) {
	if f.stop == "" {
		f.stop = event.StopCompleted
		if f.err != "" {
			f.stop = event.StopError
		}
	}
	for _, k := range s.kids {
		if !k.ended {
			a.finish(k, finishInfo{stop: event.StopAborted, err: errParentEnded})
		}
	}
	s.ended = true
	for callID, pt := range s.tools {
		if pt.open() {
			pt.State.Status, pt.State.Error, pt.State.End = ToolError, "session ended before the tool call completed", a.clock()
			if a.want {
				a.emit(PartUpdated{Part: pt.snapshot()})
			}
		}
		delete(s.tools, callID)
	}
	if s.msg != nil {
		errText := ""
		if f.stop != event.StopCompleted {
			errText = f.err
			if errText == "" {
				errText = f.stop
			}
		}
		a.closeMessage(s, errText)
	}

	s.rec.Status = session.StatusFromStop(f.stop)
	s.rec.StopReason = f.stop
	if f.final {
		if f.usage != nil {
			s.rec.TotalUsage = *f.usage
		}
		s.rec.TotalCost = f.cost
		s.rec.DurationMS = f.durationMS
	}
	if f.err != "" {
		if s.rec.Metadata == nil {
			s.rec.Metadata = map[string]any{}
		}
		s.rec.Metadata["error"] = f.err
	}
	s.rec.UpdatedAt = a.clock()
	if s.parent != nil {
		a.storeEnd(s, f)
	}
	if a.want {
		a.emit(SessionUpdated{Info: s.info()})
	}
	if f.stop == event.StopError && !s.errored {
		s.errored = true
		msg := f.err
		if msg == "" {
			msg = f.stop
		}
		if a.want {
			a.emit(SessionError{SessionID: s.rec.ID, Code: f.stop, Message: msg})
		}
	}
	if a.want {
		a.emit(SessionIdle{SessionID: s.rec.ID})
	}

	if l := s.link; l != nil && l.open() {
		if f.stop == event.StopCompleted || f.stop == event.StopMaxTokens || f.stop == event.StopRefusal {
			l.State.Status, l.State.Output = ToolCompleted, f.output
		} else {
			msg := f.err
			if msg == "" {
				msg = f.stop
			}
			l.State.Status, l.State.Error = ToolError, msg
		}
		l.State.End = a.clock()
		l.State.Metadata["stopReason"] = f.stop
		if l.CallID == "spawn:"+s.rec.ID && s.parent != nil {
			delete(s.parent.tools, l.CallID)
		}
		if a.want {
			a.emit(PartUpdated{Part: l.snapshot()})
		}
	}
	if s.parent != nil {
		delete(s.parent.kids, s.rec.ID)
	}
}

// errParentEnded is the error of a child ended because its parent ended
// first.
const errParentEnded = "parent session ended first"

// storeEnd completes the store record of an ended child, unless whoever
// ran it already did (spawn.Spawn writes the final record before the end).
func (a *applier) storeEnd(s *sess, f finishInfo) {
	a.p.storeEnd(a.ctx, s.rec.ID, s.rec.Status, f, !s.created)
}

// storeEnd writes the final status of child id into the store while the
// store shows it running; check reads the record first, so that a child
// already completed costs no write.
func (p *Processor) storeEnd(ctx context.Context, id string, status session.Status, f finishInfo, check bool) {
	st := p.store
	if st == nil {
		return
	}
	if check {
		cur, err := st.GetSession(ctx, id)
		if err != nil || cur.Status != session.StatusRunning {
			return
		}
	}
	err := st.UpdateSession(ctx, id, func(r *session.Session) {
		if r.Status != session.StatusRunning && r.Status != "" {
			return
		}
		r.Status, r.StopReason = status, f.stop
		if f.final {
			if f.usage != nil && r.TotalUsage.IsZero() {
				r.TotalUsage = *f.usage
			}
			if r.TotalCost == 0 {
				r.TotalCost = f.cost
			}
			if r.DurationMS == 0 {
				r.DurationMS = f.durationMS
			}
		}
		if f.err != "" {
			if r.Metadata == nil {
				r.Metadata = map[string]any{}
			}
			if _, set := r.Metadata["error"]; !set {
				r.Metadata["error"] = f.err
			}
		}
	})
	if err != nil {
		p.log.Warn("processor: store session end", "session", id, "err", err)
	}
}

// cloneChanges deep-copies the maps of cs, so that each subscriber has its
// own.
func cloneChanges(cs []Change) []Change {
	out := make([]Change, len(cs))
	for i, c := range cs {
		switch v := c.(type) {
		case SessionCreated:
			v.Info.Metadata = session.CloneMetadata(v.Info.Metadata)
			c = v
		case SessionUpdated:
			v.Info.Metadata = session.CloneMetadata(v.Info.Metadata)
			c = v
		case PartUpdated:
			v.Part.State.Metadata = session.CloneMetadata(v.Part.State.Metadata)
			v.Part.State.Input = append(json.RawMessage(nil), v.Part.State.Input...)
			cloneReport(&v.Part.State)
			c = v
		case PlanUpdated:
			v.Entries = slices.Clone(v.Entries)
			c = v
		}
		out[i] = c
	}
	return out
}
