// Continue-as-new of a parallel team's workflow (docs/temporal.md, "Large
// teams"). A team of thousands of members would fill its workflow's
// history (Temporal refuses more than 51,200 events), so past a threshold
// the workflow drains and continues as new:
//
//   - it starts no more members, and waits until every running member has
//     ended: their ends come to this run as child workflow completions,
//     and are handled (spawn_session_end, subagent/end) as always;
//   - it writes what is pending to the store;
//   - it continues as new with a Carry: per member (by its index in the
//     team) its session id and stop reason, the spawn budget's answers,
//     the totals of the members that ended.
//
// The new run runs the team's code again from its start. The Env answers
// the steps the earlier runs took from the carry (the budget as taken, a
// member that ended at once, with its answer read from the team's own log
// in the store by the Ends activity: ids in the workflow, texts in the
// store), drops what the team's code emits again (run_started,
// spawn_refused), and starts the other members in the window as usual.
// No member outlives the run that started it, so no end is ever handed
// from one run to the next.

package durable

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/spawn"
)

// versionContinue is the workflow.GetVersion change id of continue-as-new:
// a parallel team's workflow started by a build before it (no marker)
// runs as it began, in one run.
const versionContinue = "agentpool.team-drain-continue-as-new"

// Defaults of Engine.ContinueAfterEvents and ContinueAfterBytes: well
// under Temporal's 51,200 events and 50 MB, with room for the drain (the
// ends of a full window of members, ~4 events each).
const (
	DefaultContinueAfterEvents = 20_000
	DefaultContinueAfterBytes  = 16 << 20
)

// Carry is what a parallel team's workflow continues as new with
// (SessionInput.Carry). A team of 10,000 members carries about 55 bytes
// per member (TestCarrySize).
type Carry struct {
	// Runs is how many runs of the workflow came before this one.
	Runs int `json:"runs"`
	// Started is when the session's run started (its first workflow run).
	Started time.Time `json:"started"`
	// FirstSeq is the length of the session's log when its run began: the
	// members' spawn_session_end events follow it.
	FirstSeq int64 `json:"first_seq"`
	// Takes are the answers of the run's spawn budget (TakeSpawns), in
	// order.
	Takes []SpawnsOutput `json:"takes,omitempty"`
	// Refused is how many spawn_refused events the run emitted: the
	// team's code emits them again, and they are dropped.
	Refused int `json:"refused,omitempty"`
	// Usage and Cost are the totals of the members that ended.
	Usage event.Usage `json:"usage,omitzero"`
	Cost  float64     `json:"cost,omitempty"`
	// Members are the team's members by index, up to the last that was
	// started (or failed to start).
	Members []CarriedMember `json:"members,omitempty"`
}

// CarriedMember is one member of a continued run: I, its session id, and
// S, its stop reason (both empty: not started yet); E, why it could not
// start (I empty); C, who cancelled it on its own, when someone did.
// Short names: 10,000 of them travel in the next run's input.
type CarriedMember struct {
	I string           `json:"i,omitempty"`
	S event.StopReason `json:"s,omitempty"`
	E string           `json:"e,omitempty"`
	C *CarriedCancel   `json:"c,omitempty"`
}

// CarriedCancel is a member's spawn.CancelledError, without its session
// id (the member's).
type CarriedCancel struct {
	By    string `json:"by,omitempty"`
	Agent string `json:"agent,omitempty"`
}

func (c CarriedMember) started() bool { return c.I != "" || c.E != "" }

// EndsInput asks the Ends activity for the answers of members that ended:
// their spawn_session_end in the log of Session after AfterSeq, in the
// order of IDs, at most Budget bytes in all.
type EndsInput struct {
	Session  string   `json:"session"`
	AfterSeq int64    `json:"after_seq"`
	IDs      []string `json:"ids"`
	Budget   int      `json:"budget"`
}

// EndText is a member's answer (T) and error (E) as its
// spawn_session_end has them.
type EndText struct {
	T string `json:"t,omitempty"`
	E string `json:"e,omitempty"`
}

// Ends reads the answers of ended members from their team's log. Past the
// budget a text is empty: the team's answer is cut at MaxResultText, and
// every member's answer is whole in its own session.
func (a *Activities) Ends(ctx context.Context, in EndsInput) ([]EndText, error) {
	recs, err := a.Store.Events(ctx, in.Session, in.AfterSeq)
	if err != nil {
		return nil, err
	}
	want := make(map[string]int, len(in.IDs))
	for i, id := range in.IDs {
		want[id] = i
	}
	ends := make([]*event.SpawnSessionEnd, len(in.IDs))
	for _, r := range recs {
		if e, ok := r.Event.(event.SpawnSessionEnd); ok {
			if i, ok := want[e.ChildSessionID]; ok {
				ends[i] = &e
			}
		}
	}
	out := make([]EndText, len(in.IDs))
	left := in.Budget
	for i, e := range ends {
		if e == nil {
			return nil, fmt.Errorf("no end of member %s in the log of %s", in.IDs[i], in.Session)
		}
		if n := len(e.LastAssistantMessage) + len(e.Error); n <= left {
			out[i], left = EndText{T: e.LastAssistantMessage, E: e.Error}, left-n
		}
	}
	return out, nil
}

// mover is the continue-as-new state of a parallel team's workflow run.
// Its fields are the workflow's deterministic state, read and changed by
// its coroutines (one runs at a time).
type mover struct {
	env   *wfEnv
	carry *Carry // what this run was continued with; nil in the first run
	// afterEvents and afterBytes: the history past which the run drains.
	afterEvents, afterBytes int
	first                   int64     // Carry.FirstSeq
	started                 time.Time // Carry.Started
	members                 []CarriedMember
	takes                   []SpawnsOutput
	// begun counts the members this run started; blocked the spawns
	// waiting for a slot (members not started yet).
	begun, blocked int
	// draining: no member starts; gaveUp: this run no longer continues
	// as new (a write before it failed); unkeyed: a spawn came outside
	// the team's branches, so the carry could not answer it.
	draining, gaveUp, unkeyed bool
	totals                    bool // the carried totals were added
	// branches and finished count the team's branches (Parallel);
	// waiting those that wait to read their member's answer (answer).
	branches, finished, waiting int
	textsDue                    bool
	texts                       workflow.Future // the Ends activity, once asked
	textAt                      map[string]int
	// read holds the Ends activity's answer once decoded (readErr its
	// failure): a Get decodes the whole payload each time, and thousands
	// of carried members decoding 10,000 answers each took the last
	// workflow task of a 10,000-member team past its 10 s timeout, again
	// and again.
	read    []EndText
	readErr error
	decoded bool
	// named: the members' ids come from names (versionMemberNames);
	// runID is the agentpool run's (the same in every workflow run).
	named bool
	runID string
}

func newMover(env *wfEnv, in SessionInput, afterEvents, afterBytes int, started time.Time) *mover {
	m := &mover{env: env, carry: in.Carry, afterEvents: afterEvents, afterBytes: afterBytes, first: in.AfterSeq, started: started, runID: in.RunID}
	if c := in.Carry; c != nil {
		m.first, m.started = c.FirstSeq, c.Started
		m.members = append([]CarriedMember(nil), c.Members...)
	}
	return m
}

// memberKey carries a branch's index (Parallel) to Spawn: the member's
// place in the carry.
type memberKey struct{}

// member returns the member index of a spawn in ctx (false: the spawn is
// not a branch's, and the run will not continue as new).
func (m *mover) member(ctx context.Context) (int, bool) {
	k, ok := ctx.Value(memberKey{}).(int)
	if !ok {
		m.unkeyed = true
	}
	return k, ok
}

// carried returns what an earlier run did with member k, when it started it.
func (m *mover) carried(k int) (CarriedMember, bool) {
	if m.carry == nil || k >= len(m.carry.Members) || !m.carry.Members[k].started() {
		return CarriedMember{}, false
	}
	return m.carry.Members[k], true
}

// names returns the generator of member k's ids and the time they are
// made at: its session's, its run's and its task's are the same in every
// run of the team's workflow, whatever else the run named before. A
// worker killed in a workflow task whose Create had stored members leaves
// them for the task done again; when that task's longer history makes
// the run drain instead, the members start in a later run, which names
// them alike: their sessions, stored and started, are the ones that run
// and end (Create finds them, and their starts, in the store).
func (m *mover) names(k int) (*id.Generator, time.Time) {
	seed := sha256.Sum256([]byte("agentpool/" + m.env.j.sid + "/" + m.runID + "/member/" + strconv.Itoa(k)))
	// Three ids a member at most: time parts in the order of the index.
	return id.NewSeededFrom(seed, m.started, 3*k), m.started
}

// set records what became of member k in this run.
func (m *mover) set(k int, c CarriedMember) {
	for len(m.members) <= k {
		m.members = append(m.members, CarriedMember{})
	}
	m.members[k] = c
}

// ended records member k's end.
func (m *mover) ended(k int, sessionID string, res spawn.Result) {
	c := CarriedMember{I: sessionID, S: res.StopReason}
	if ce, ok := errors.AsType[*spawn.CancelledError](res.Err); ok && ce.SessionID == sessionID {
		c.C = &CarriedCancel{By: ce.By, Agent: ce.Agent}
	}
	m.set(k, c)
}

// holds reports whether spawns wait (the run drains). Nil-safe.
func (m *mover) holds() bool { return m != nil && m.draining }

// addTotals adds the totals of the members that ended in earlier runs,
// once, at the run's first spawn.
func (m *mover) addTotals(kids spawn.Children) {
	if !m.totals && m.carry != nil {
		m.totals = true
		kids.AddTotals(m.carry.Usage, m.carry.Cost)
	}
}

// take answers a TakeSpawns call as the earlier runs were answered (false:
// ask). Nil-safe.
func (m *mover) take() (SpawnsOutput, bool) {
	if m == nil || m.carry == nil || len(m.takes) >= len(m.carry.Takes) {
		return SpawnsOutput{}, false
	}
	out := m.carry.Takes[len(m.takes)]
	m.takes = append(m.takes, out)
	return out, true
}

// took records a TakeSpawns answer. Nil-safe.
func (m *mover) took(out SpawnsOutput) {
	if m != nil {
		m.takes = append(m.takes, out)
	}
}

// answer is Spawn's answer for a member an earlier run started: its
// failure to start, or its end. A member's answer and error are read from
// the store once every other branch of the team has finished (when the
// team's answer is made: a run that continues as new reads none).
func (m *mover) answer(wc workflow.Context, c CarriedMember) (spawn.Child, error) {
	if c.I == "" {
		return spawn.Child{}, errors.New(c.E)
	}
	res := spawn.Result{StopReason: c.S}
	if c.C != nil {
		res.Err = &spawn.CancelledError{SessionID: c.I, By: c.C.By, Agent: c.C.Agent}
		return spawn.Child{SessionID: c.I, Result: res}, nil
	}
	m.waiting++
	_ = workflow.Await(wc, func() bool { return m.textsDue || m.finished+m.waiting >= m.branches })
	m.textsDue = true
	t := m.text(wc, c.I)
	res.Output = t.T
	if t.E != "" {
		res.Err = errors.New(t.E)
	}
	return spawn.Child{SessionID: c.I, Result: res}, nil
}

// text is the answer of carried member id, read for every carried member
// by one Ends activity.
func (m *mover) text(wc workflow.Context, id string) EndText {
	if wc.Err() != nil {
		// A cancelled team's answer still has its members'.
		wc, _ = workflow.NewDisconnectedContext(wc)
	}
	if m.texts == nil {
		var ids []string
		m.textAt = map[string]int{}
		for _, c := range m.carry.Members {
			if c.I != "" && c.C == nil {
				m.textAt[c.I] = len(ids)
				ids = append(ids, c.I)
			}
		}
		in := EndsInput{Session: m.env.j.sid, AfterSeq: m.first, IDs: ids, Budget: MaxResultText}
		m.texts = workflow.ExecuteActivity(workflow.WithActivityOptions(wc, storeOptions), actEnds, in)
	}
	if !m.decoded {
		// Get blocks until the activity ended; decoded once it did.
		m.readErr = m.texts.Get(wc, &m.read)
		m.decoded = true
	}
	if m.readErr != nil {
		return EndText{E: fmt.Sprintf("its end could not be read from the store: %v", m.readErr)}
	}
	if i, ok := m.textAt[id]; ok && i < len(m.read) {
		return m.read[i]
	}
	return EndText{}
}

// due reports whether the run should drain and continue as new: its
// history is past the bounds, it started a member of its own (each run
// makes progress), members wait to start, and nothing stops it.
func (m *mover) due(wctx workflow.Context, ctx context.Context) bool {
	// wctx too: a cancel of the workflow reaches ctx only once the
	// coroutine that relays it runs, and a due run whose drain stops at
	// once (cancelled) must wait for it, not loop without yielding.
	if m.gaveUp || m.unkeyed || m.draining || m.begun == 0 || m.blocked == 0 || ctx.Err() != nil || wctx.Err() != nil {
		return false
	}
	info := workflow.GetInfo(wctx)
	return info.GetCurrentHistoryLength() >= m.afterEvents || info.GetCurrentHistorySize() >= m.afterBytes
}

// drain holds the members not started, waits for the running ones to
// end, writes what is pending and returns the next run's input; nil when
// the run goes on instead (the team ended, was cancelled, or a write
// failed).
func (m *mover) drain(dc, wctx workflow.Context, ctx context.Context, inv *spawn.Invocation, in SessionInput, done *bool) *SessionInput {
	e := m.env
	m.draining = true
	stopped := func() bool { return *done || ctx.Err() != nil || wctx.Err() != nil }
	_ = workflow.Await(dc, func() bool { return stopped() || e.children == 0 })
	for !stopped() && e.j.pending() {
		// The write looks at the log first: a worker killed in the
		// workflow task that crosses the bounds may have written what is
		// pending with members it created (Create), and the task done
		// again, whose longer history makes it drain before creating
		// them, writes it here. Without the look, the members' ends it
		// carried were in the log twice (seen at 10,000 members, the
		// kill in that task).
		e.j.check = true
		var err error
		e.locked(dc, func() { err = e.write(dc) })
		if err != nil {
			// The run goes on where it is (its history has room); the
			// failed write is retried by the next one.
			workflow.GetLogger(dc).Warn("continue-as-new given up: store", "session", in.Session.ID, "error", err)
			m.gaveUp, m.draining = true, false
			return nil
		}
	}
	if stopped() || e.children > 0 {
		m.draining = false
		return nil
	}
	// draining stays set: the members that wait must not start in what is
	// left of this workflow task, after the run decided to continue.
	e.takeSignals() // messages to the team go on to the next run
	usage, cost := inv.ChildTotals()
	c := Carry{Started: m.started, FirstSeq: m.first, Takes: m.takes, Refused: e.j.refused, Usage: usage, Cost: cost}
	if m.carry != nil {
		c.Runs = m.carry.Runs
	}
	c.Runs++
	c.Members = m.members
	for len(c.Members) > 0 && !c.Members[len(c.Members)-1].started() {
		c.Members = c.Members[:len(c.Members)-1]
	}
	next := in
	next.Carry, next.AfterSeq, next.Inject = &c, e.j.seq, inv.Injected()
	info := workflow.GetInfo(wctx)
	workflow.GetLogger(dc).Info("continuing as new", "session", in.Session.ID, "runs", c.Runs,
		"history_events", info.GetCurrentHistoryLength(), "history_bytes", info.GetCurrentHistorySize(), "members", len(c.Members))
	return &next
}

// runContinuing runs the node of a parallel team's workflow in a coroutine
// of its own while the run's history is watched: past its bounds the run
// drains (mover.drain) and runContinuing returns the next run's input;
// nil once the node ended, its result in *res.
func runContinuing(wctx workflow.Context, ctx context.Context, env *wfEnv, node spawn.Node, inv *spawn.Invocation, in SessionInput, res *spawn.Result) *SessionInput {
	m := env.mover
	done := false
	workflow.Go(wctx, func(c workflow.Context) {
		// The node's steps block in this coroutine: the Env's root
		// context is its own while it runs.
		env.root = c
		*res = runNode(ctx, node, inv)
		env.root = wctx
		done = true
	})
	dc, _ := workflow.NewDisconnectedContext(wctx)
	for {
		_ = workflow.Await(dc, func() bool { return done || m.due(wctx, ctx) })
		if done {
			return nil
		}
		if next := m.drain(dc, wctx, ctx, inv, in, &done); next != nil {
			return next
		}
	}
}
