// Continue-as-new of a parallel team's workflow: a team of thousands of
// members would fill its workflow's history (Temporal refuses more than
// 51,200 events), so the workflow continues as new before it does,
// carrying which members ended (ids, stop reasons) and which still run;
// the members keep running across the boundary.
//
// Temporal does not carry children across continue-as-new: a child's end
// is reported to the run that started it, and a closed run's children get
// their parent close policy. So the members of a team that may continue
// are started with parent close policy ABANDON, and before the run
// continues it tells each running member (SignalParentMoved) to report
// its end by signal to the workflow id (SignalChildEnded: the current run,
// whichever it is). A member that had ended when told reports to the old
// run, which settles it before it continues.
//
// The team's code runs again in the new run, from its start: the
// Env answers its first steps from what was carried (the budget it took,
// the members that ended, with their texts read from the team's own log
// in the store by the Ends activity, not carried in history; the members
// that run, whose ends come by signal), so it takes the decisions it took
// before and goes on where it was.

package durable

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
)

// Signals of continue-as-new.
const (
	// SignalParentMoved tells a running child that its parent's run
	// continued as new: it reports its end by SignalChildEnded.
	SignalParentMoved = "agentpool.parent_moved"
	// SignalChildEnded carries a child's end (ChildEndedSignal) to its
	// parent's current run.
	SignalChildEnded = "agentpool.child_ended"
)

// versionContinue is the workflow.GetVersion change id of continue-as-new:
// a parallel team's workflow started before it (no marker) runs its
// members with parent close policy REQUEST_CANCEL and never continues.
const versionContinue = "agentpool.team-continue-as-new"

// Defaults of Engine.ContinueAfterEvents and ContinueAfterBytes: well under
// Temporal's 51,200 events and 50 MB, with room for what a run does
// after it decided to continue (a signal to each running member, two
// events each, and the ends of members that were ending).
const (
	DefaultContinueAfterEvents = 20_000
	DefaultContinueAfterBytes  = 16 << 20
)

// Carry is what a team's workflow continues as new with
// (SessionInput.Carry).
type Carry struct {
	// Runs is how many runs of the workflow came before this one.
	Runs int `json:"runs"`
	// Started is when the session's run started (its first workflow run).
	Started time.Time `json:"started"`
	// FirstSeq is the length of the session's log when its run began:
	// the members' spawn_session_end events follow it.
	FirstSeq int64 `json:"first_seq"`
	// Takes are the answers of the run's spawn budget (TakeSpawns), in
	// order.
	Takes []SpawnsOutput `json:"takes,omitempty"`
	// Spawns are the run's delegations so far, in the order the node
	// asked for them.
	Spawns []CarriedSpawn `json:"spawns,omitempty"`
	// Refused is how many spawn_refused events the run emitted: the
	// node's code emits them again, and they are dropped.
	Refused int `json:"refused,omitempty"`
	// Usage and Cost are the totals of the children that ended.
	Usage event.Usage `json:"usage,omitzero"`
	Cost  float64     `json:"cost,omitempty"`
	// ParentMoved: the session's own parent continued as new, and the
	// session reports its end by signal.
	ParentMoved bool `json:"parent_moved,omitempty"`
	// Cancelled: the run was cancelled while it continued as new.
	Cancelled bool `json:"cancelled,omitempty"`
}

// CarriedSpawn is one delegation of a continued run: I, the child's
// session id, and S, its stop reason once it ended (empty: it runs, or
// it never started when I is empty too); E is its error, or why the
// spawn failed (I empty). Short names: a team of 10,000 members carries
// 10,000 of them, in the input of the workflow's next run.
type CarriedSpawn struct {
	I string           `json:"i,omitempty"`
	S event.StopReason `json:"s,omitempty"`
	E string           `json:"e,omitempty"`
}

// ChildEndedSignal is SignalChildEnded's payload.
type ChildEndedSignal struct {
	Session string        `json:"session"`
	Output  SessionOutput `json:"output"`
}

// EndsInput asks the Ends activity for the texts of children that ended:
// their spawn_session_end in the log of Session after AfterSeq, at most
// Budget bytes in all, in the order of IDs.
type EndsInput struct {
	Session  string   `json:"session"`
	AfterSeq int64    `json:"after_seq"`
	IDs      []string `json:"ids"`
	Budget   int      `json:"budget"`
}

// Ends reads the last answers of ended children from their parent's log
// (their spawn_session_end). Past the budget a text is empty: the
// parent's result is cut at MaxResultText, and every text is in the
// child's own session.
func (a *Activities) Ends(ctx context.Context, in EndsInput) ([]string, error) {
	recs, err := a.Store.Events(ctx, in.Session, in.AfterSeq)
	if err != nil {
		return nil, err
	}
	texts := make(map[string]string, len(in.IDs))
	for _, r := range recs {
		if e, ok := r.Event.(event.SpawnSessionEnd); ok {
			texts[e.ChildSessionID] = e.LastAssistantMessage
		}
	}
	out := make([]string, len(in.IDs))
	left := in.Budget
	for i, id := range in.IDs {
		t, ok := texts[id]
		if !ok {
			return nil, fmt.Errorf("no end of child %s in the log of %s", id, in.Session)
		}
		if len(t) > left {
			break
		}
		out[i], left = t, left-len(t)
	}
	return out, nil
}

// spawnRec is one delegation of the run, as mover keeps it.
type spawnRec struct {
	id      string
	stop    event.StopReason // once it ended
	err     string
	done    bool // ended, and its end handled (carried, or emitted)
	running bool // its child workflow started (or was carried running)
	moved   bool // it reports its end by signal
}

// mover is the continue-as-new state of a session's workflow that may
// continue (a parallel team's).
type mover struct {
	in        *Carry
	afterEvts int
	afterSize int
	first     int64 // Carry.FirstSeq
	started   time.Time
	spawns    []*spawnRec // by the order the node asked
	takes     []SpawnsOutput
	moving    bool // the run continues: no new child starts
	starting  int  // children between their slot and their start
	progress  int  // children this run started
	ended     map[string]*ChildEndedSignal
	env       *wfEnv
	texts     workflow.Future // the Ends activity, once asked
	textAt    map[string]int  // a child's place in its answer
	totals    bool            // the carried totals were added
}

func newMover(env *wfEnv, in *Carry, afterEvents, afterBytes int, first int64, started time.Time) *mover {
	m := &mover{env: env, in: in, afterEvts: afterEvents, afterSize: afterBytes, first: first, started: started,
		ended: map[string]*ChildEndedSignal{}}
	if in != nil {
		m.first, m.started = in.FirstSeq, in.Started
	}
	return m
}

// receive takes the children's ends signalled to the workflow.
func (m *mover) receive(wctx workflow.Context) workflow.ReceiveChannel {
	ch := workflow.GetSignalChannel(wctx, SignalChildEnded)
	dc, _ := workflow.NewDisconnectedContext(wctx)
	workflow.Go(dc, func(c workflow.Context) {
		for {
			var s ChildEndedSignal
			if !ch.Receive(c, &s) {
				return
			}
			m.ended[s.Session] = &s
		}
	})
	return ch
}

// due reports whether the run's history is large enough to continue, once
// it started a child of its own (each run makes progress, whatever the
// bounds).
func (m *mover) due(wctx workflow.Context) bool {
	info := workflow.GetInfo(wctx)
	return m.progress > 0 && (info.GetCurrentHistoryLength() >= m.afterEvts || info.GetCurrentHistorySize() >= m.afterSize)
}

// take answers a TakeSpawns call from what was carried (ok false: ask).
func (m *mover) take() (SpawnsOutput, bool) {
	if m.in != nil && len(m.takes) < len(m.in.Takes) {
		out := m.in.Takes[len(m.takes)]
		m.takes = append(m.takes, out)
		return out, true
	}
	return SpawnsOutput{}, false
}

// next records a new delegation and returns it with what was carried of
// it (nil: a new spawn).
func (m *mover) next() (*spawnRec, *CarriedSpawn) {
	rec := &spawnRec{}
	m.spawns = append(m.spawns, rec)
	k := len(m.spawns) - 1
	if m.in == nil || k >= len(m.in.Spawns) {
		return rec, nil
	}
	c := m.in.Spawns[k]
	if c.I == "" && c.E == "" {
		return rec, nil // it had not started
	}
	rec.id, rec.stop, rec.err = c.I, c.S, c.E
	rec.done = c.S != "" || c.I == ""
	rec.running, rec.moved = c.I != "" && c.S == "", c.I != "" && c.S == ""
	return rec, &c
}

// spawnCarried is Spawn's answer for a delegation the earlier run made:
// its failure, its end (the text from the store), or, while it runs,
// its end when it signals it.
func (m *mover) spawnCarried(ctx context.Context, parent *spawn.Invocation, req spawn.Request, kids spawn.Children, rec *spawnRec, c *CarriedSpawn) (spawn.Child, error) {
	e := m.env
	wc := e.wctx(ctx)
	if !m.totals {
		m.totals = true
		kids.AddTotals(m.in.Usage, m.in.Cost)
	}
	switch {
	case c.I == "":
		return spawn.Child{}, fmt.Errorf("cannot spawn %s: %s", req.Node.Name(), c.E)
	case c.S != "":
		res := spawn.Result{StopReason: c.S}
		if c.E != "" {
			res.Err = fmt.Errorf("%s", c.E)
		}
		if completedStop(c.S) {
			text, err := m.carriedText(wc, c.I)
			if err != nil {
				return spawn.Child{}, fmt.Errorf("the end of %s: %w", c.I, err)
			}
			res.Output = text
		}
		return spawn.Child{SessionID: c.I, Result: res}, nil
	}
	// It runs: a slot is its, and its end comes by signal.
	e.children++
	defer func() { e.children-- }()
	depth := parent.Session.Depth + 1
	info := spawn.StartInfo{ChildSessionID: c.I, ParentSessionID: parent.Session.ID, Name: req.Node.Name(),
		SourceType: req.Node.SourceType(), Depth: depth, Mechanism: req.Mechanism, RunMode: event.RunModeSync,
		ParentAgent: parent.Session.AgentName}
	out := m.awaitSignalled(wc, rec)
	res := out.Result()
	if res.StopReason == event.StopAborted && wc.Err() == nil {
		// The child alone was cancelled, as runChild says it.
		res.Err = &spawn.CancelledError{SessionID: c.I}
		out.Error = res.Err.Error()
	}
	return spawn.Child{SessionID: c.I, Result: e.childEnded(wc, parent, kids, &req, &info, rec, out, res, true)}, nil
}

// completedStop reports whether a child that stopped so has an answer.
func completedStop(s event.StopReason) bool {
	return s == event.StopCompleted || s == event.StopMaxTokens
}

// carriedText is the answer of the carried child id, read once per run
// for every carried child by the Ends activity.
func (m *mover) carriedText(wc workflow.Context, id string) (string, error) {
	if m.texts == nil {
		var ids []string
		m.textAt = map[string]int{}
		for _, c := range m.in.Spawns {
			if c.I != "" && completedStop(c.S) {
				m.textAt[c.I] = len(ids)
				ids = append(ids, c.I)
			}
		}
		in := EndsInput{Session: m.env.j.sid, AfterSeq: m.first, IDs: ids, Budget: MaxResultText}
		m.texts = workflow.ExecuteActivity(workflow.WithActivityOptions(wc, storeOptions), actEnds, in)
	}
	var texts []string
	if err := m.texts.Get(wc, &texts); err != nil {
		return "", err
	}
	if i, ok := m.textAt[id]; ok && i < len(texts) {
		return texts[i], nil
	}
	return "", nil
}

// awaitSignalled waits for the end of a child that reports it by signal;
// a cancellation of the run cancels the child, whose end still comes.
func (m *mover) awaitSignalled(wc workflow.Context, rec *spawnRec) SessionOutput {
	dc, _ := workflow.NewDisconnectedContext(wc)
	asked := false
	for {
		_ = workflow.Await(dc, func() bool { return m.ended[rec.id] != nil || (!asked && wc.Err() != nil) })
		if s := m.ended[rec.id]; s != nil {
			return s.Output
		}
		asked = true
		_ = workflow.RequestCancelExternalWorkflow(dc, rec.id, "").Get(dc, nil)
	}
}

// moveOut prepares the run to continue as new: no new child starts, the
// children being started are, each running child is told to report its
// end by signal, those that had ended are settled; then what is pending
// is written. It returns the Carry, or ok false when the node ended
// meanwhile.
func (m *mover) moveOut(wctx workflow.Context, inv *spawn.Invocation, ends workflow.ReceiveChannel, done *bool) (Carry, bool, error) {
	e := m.env
	m.moving = true
	dc, _ := workflow.NewDisconnectedContext(wctx)
	_ = workflow.Await(dc, func() bool { return m.starting == 0 || *done })
	var told []workflow.Future
	var recs []*spawnRec
	for _, rec := range m.spawns {
		if rec.running && !rec.done && !rec.moved {
			told = append(told, workflow.SignalExternalWorkflow(dc, rec.id, "", SignalParentMoved, true))
			recs = append(recs, rec)
		}
	}
	for i, f := range told {
		// A child that could not be told had ended: its end comes to
		// this run.
		if f.Get(dc, nil) == nil {
			recs[i].moved = true
		}
	}
	for {
		// Every child is settled (ended and handled, or moved), and the
		// moved ones whose end came are handled; what they emitted is
		// written; then no end may be waiting in the channel, which a run
		// that continues would lose. A write yields, and ends may come
		// meanwhile: the last pass is one with nothing to do, and nothing
		// yields between it and the continue-as-new.
		_ = workflow.Await(dc, func() bool { return *done || m.settled() })
		if *done {
			return Carry{}, false, nil
		}
		if len(e.j.events) > 0 || len(e.j.msgs) > 0 {
			var err error
			e.locked(dc, func() { err = e.write(dc) })
			if err != nil {
				// As a failed write at the session's end: the run fails.
				return Carry{}, false, fmt.Errorf("store the events of session %s before it continues as new: %w", e.j.sid, err)
			}
			continue
		}
		var s ChildEndedSignal
		if !ends.ReceiveAsync(&s) {
			break
		}
		m.ended[s.Session] = &s
	}
	usage, cost := inv.ChildTotals()
	c := Carry{Started: m.started, FirstSeq: m.first, Takes: m.takes, Refused: e.j.refused,
		Usage: usage, Cost: cost, Cancelled: wctx.Err() != nil}
	if m.in != nil {
		c.Runs = m.in.Runs
		c.ParentMoved = m.in.ParentMoved
	}
	c.Runs++
	for _, rec := range m.spawns {
		switch {
		case rec.done || rec.moved:
			c.Spawns = append(c.Spawns, CarriedSpawn{I: rec.id, S: rec.stop, E: cutText(rec.err, 1024)})
		default:
			c.Spawns = append(c.Spawns, CarriedSpawn{})
		}
	}
	for len(c.Spawns) > 0 && c.Spawns[len(c.Spawns)-1] == (CarriedSpawn{}) {
		c.Spawns = c.Spawns[:len(c.Spawns)-1]
	}
	return c, true, nil
}

// settled reports whether every started child ended and was handled, or
// reports its end by signal and has not yet (or was handled).
func (m *mover) settled() bool {
	for _, rec := range m.spawns {
		if !rec.running || rec.done {
			continue
		}
		if !rec.moved || m.ended[rec.id] != nil {
			return false
		}
	}
	return true
}

// reportEnd sends the session's end to its parent's current run when its
// parent moved (SignalParentMoved, or Carry.ParentMoved).
func reportEnd(wctx workflow.Context, in SessionInput, moved workflow.ReceiveChannel, out SessionOutput) {
	var x bool
	told := moved.ReceiveAsync(&x) || (in.Carry != nil && in.Carry.ParentMoved)
	if !told || in.Session.ParentID == "" {
		return
	}
	dc, _ := workflow.NewDisconnectedContext(wctx)
	err := workflow.SignalExternalWorkflow(dc, in.Session.ParentID, "", SignalChildEnded, ChildEndedSignal{Session: in.Session.ID, Output: out}).Get(dc, nil)
	if err != nil {
		workflow.GetLogger(wctx).Warn("the end could not be reported to the parent", "session", in.Session.ID, "error", err)
	}
}
