package treeview

import (
	"strings"
	"time"

	"github.com/agentpool/agentpool/event"
)

// Node is one session of the tree.
type Node struct {
	ID        string
	Name      string // agent or team name
	Mechanism string // how it was spawned: task, worker, team, member, manual ("" for the root)
	Children  []*Node
	parent    *Node

	Start    time.Time // when its spawn (or the run) was seen
	Done     bool      // its spawn_session_end (or the run's end) was seen
	Stop     event.StopReason
	Err      string        // why it failed, when it did
	Duration time.Duration // set when done

	activity string            // "thinking", "writing" or the tool it calls
	open     map[string]string // open tool calls: id → tool name
	ToolUses int
	Tokens   int64   // its own tokens (the run's, once it completed)
	Cost     float64 // its own cost, when known

	finished, failed int // children done, and of those not completed
}

// Activity is what a running session does now: the tool it calls,
// "thinking" or "writing"; "" when nothing was seen yet.
func (n *Node) Activity() string { return n.activity }

// Model is the state of the tree, built from one event stream (the root
// run's: its own events plain, its descendants' wrapped in subagent
// events). It is not safe for concurrent use: one goroutine applies events
// and renders.
type Model struct {
	Root   *Node
	nodes  map[string]*Node
	answer strings.Builder // the root's streamed text
	// Summary is set by Finish: the run is over.
	Summary *Summary
}

// Summary is how the run ended, as the pool reports it.
type Summary struct {
	SessionID string
	Stop      event.StopReason
	Usage     event.Usage // over the whole tree
	Cost      float64     // over the whole tree
	Err       string
	// Duration is the root's run time; 0: from its start to Finish.
	Duration time.Duration
}

// New returns the model of a run that starts at now.
func New(now time.Time) *Model {
	root := &Node{Start: now, open: map[string]string{}}
	return &Model{Root: root, nodes: map[string]*Node{}}
}

// Answer is the text the root has written so far.
func (m *Model) Answer() string { return m.answer.String() }

// node returns the node of session id, the root for the stream owner.
func (m *Model) node(id string) *Node {
	if id == "" || id == m.Root.ID {
		return m.Root
	}
	return m.nodes[id]
}

// Apply updates the tree with one event of the stream, seen at now.
func (m *Model) Apply(e event.Event, now time.Time) {
	owner := ""
	if s, ok := e.(event.Subagent); ok {
		owner, e = s.ChildSessionID, s.Event
	}
	if rs, ok := e.(event.RunStarted); ok && owner == "" {
		if m.Root.ID == "" {
			m.Root.ID, m.Root.Name = rs.SessionID, rs.AgentName
		}
		return
	}
	n := m.node(owner)
	if n == nil {
		return // a session whose start this stream never carried
	}
	switch e := e.(type) {
	case event.SpawnSessionStart:
		m.spawn(n, e, now)
	case event.SpawnSessionEnd:
		m.end(e)
	case event.PartStart:
		switch e.Part.PartKind {
		case event.PartThinking:
			n.activity = "thinking"
		case event.PartText:
			n.activity = "writing"
			if n == m.Root {
				m.answer.WriteString(e.Part.Content)
			}
		}
	case event.PartDelta:
		switch e.Delta.PartDeltaKind {
		case event.PartThinking:
			n.activity = "thinking"
		case event.PartText:
			n.activity = "writing"
			if n == m.Root {
				m.answer.WriteString(e.Delta.ContentDelta)
			}
		}
	case event.ToolCallStart:
		n.ToolUses++
		n.open[e.ToolCallID] = e.ToolName
		n.activity = "calling " + e.ToolName
	case event.ToolCallComplete:
		delete(n.open, e.ToolCallID)
		n.activity = ""
		for _, name := range n.open {
			n.activity = "calling " + name
			break
		}
	case event.StreamComplete:
		n.Tokens = e.Message.Usage.InputTokens + e.Message.Usage.OutputTokens
		n.Cost = e.Message.Cost
	case event.RunError:
		n.Err = e.Message
	}
}

func (m *Model) spawn(parent *Node, e event.SpawnSessionStart, now time.Time) {
	if _, dup := m.nodes[e.ChildSessionID]; dup {
		return
	}
	mech := string(e.SpawnMechanism)
	switch {
	case e.SourceType == event.SourceTeamParallel || e.SourceType == event.SourceTeamSequential:
		mech = "team"
	case e.SpawnMechanism == event.MechanismSpawn:
		mech = "member"
	}
	c := &Node{ID: e.ChildSessionID, Name: e.SourceName, Mechanism: mech, Start: now, open: map[string]string{}, parent: parent}
	m.nodes[c.ID] = c
	parent.Children = append(parent.Children, c)
}

func (m *Model) end(e event.SpawnSessionEnd) {
	c := m.nodes[e.ChildSessionID]
	if c == nil || c.Done {
		return
	}
	c.Done, c.Stop, c.activity = true, e.StopReason, ""
	clear(c.open)
	if e.Error != "" {
		c.Err = e.Error
	}
	c.Duration = time.Duration(e.DurationMS) * time.Millisecond
	if e.Usage != nil {
		// The end's usage covers the child's whole subtree; keep only what
		// the child's own runs used, so that sums over the tree count once.
		c.Tokens = max(0, e.Usage.InputTokens+e.Usage.OutputTokens-subtreeTokens(c)+c.Tokens)
	}
	if e.Cost > 0 {
		c.Cost = max(0, e.Cost-subtreeCost(c)+c.Cost)
	}
	c.countEnd()
}

// countEnd counts n's end in its parent's tally of finished children.
func (n *Node) countEnd() {
	if n.parent == nil {
		return
	}
	n.parent.finished++
	if n.Stop != event.StopCompleted && n.Stop != event.StopMaxTokens {
		n.parent.failed++
	}
}

// Finish marks the run over: the root ends as the pool reported, and
// every session still open (a stream cut short) counts as aborted.
func (m *Model) Finish(s Summary, now time.Time) {
	m.Summary = &s
	r := m.Root
	if r.ID == "" {
		r.ID = s.SessionID
	}
	r.Done, r.Stop, r.activity, r.Duration = true, s.Stop, "", now.Sub(r.Start)
	if s.Duration > 0 {
		r.Duration = s.Duration
	}
	if s.Err != "" {
		r.Err = s.Err
	}
	clear(r.open)
	r.Tokens = max(0, s.Usage.InputTokens+s.Usage.OutputTokens-subtreeTokens(r)+r.Tokens)
	r.Cost = max(0, s.Cost-subtreeCost(r)+r.Cost)
	for _, n := range m.nodes {
		if !n.Done {
			n.Done, n.Stop, n.activity, n.Duration = true, event.StopAborted, "", now.Sub(n.Start)
			clear(n.open)
			n.countEnd()
		}
	}
}

// subtreeTokens is the tokens of n and all its descendants.
func subtreeTokens(n *Node) int64 {
	t := n.Tokens
	for _, c := range n.Children {
		t += subtreeTokens(c)
	}
	return t
}

func subtreeCost(n *Node) float64 {
	c := n.Cost
	for _, ch := range n.Children {
		c += subtreeCost(ch)
	}
	return c
}
