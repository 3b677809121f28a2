package eventtest

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/event"
)

// Violation is one broken invariant.
type Violation struct {
	Invariant int    // the number of the invariant in docs/spec/EVENTS.md §3
	Index     int    // index of the offending event in the stream; -1 for the end of the stream
	Msg       string // what is wrong
}

func (v Violation) String() string {
	if v.Index < 0 {
		return fmt.Sprintf("invariant %d at end of stream: %s", v.Invariant, v.Msg)
	}
	return fmt.Sprintf("invariant %d at event %d: %s", v.Invariant, v.Index, v.Msg)
}

// Error lists the violations found in a stream.
type Error struct {
	Violations []Violation
}

// maxViolations bounds how many violations an Error keeps.
const maxViolations = 25

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d event invariant violation(s):", len(e.Violations))
	for _, v := range e.Violations {
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	return b.String()
}

// Has reports whether some violation concerns the given invariant.
func (e *Error) Has(invariant int) bool {
	for _, v := range e.Violations {
		if v.Invariant == invariant {
			return true
		}
	}
	return false
}

// metaResumed is spawn.MetaResumed: the metadata key of the start of a
// finished child continued in its session.
const metaResumed = "resumed"

// sessionState is what the checker knows about one session of the tree.
type sessionState struct {
	parent     string
	depth      int
	path       []string // session ids from the root's child down to this session
	ended      bool
	open       int  // children started and not yet ended
	runStarted bool // a run_started was seen
	terminal   bool // a stream_complete or run_error was seen
	seen       bool // some (non-custom) event of the session was seen
}

type checker struct {
	root     string
	sessions map[string]*sessionState
	runIDs   map[string]int
	out      []Violation
}

func (c *checker) fail(inv, idx int, format string, args ...any) {
	if len(c.out) >= maxViolations {
		return
	}
	c.out = append(c.out, Violation{Invariant: inv, Index: idx, Msg: fmt.Sprintf(format, args...)})
}

// CheckInvariants checks a complete root stream (the events a root run in
// session root emitted, in order) and returns an *Error listing every
// violation, or nil.
func CheckInvariants(root string, evs []event.Event) error {
	c := &checker{
		root:     root,
		sessions: map[string]*sessionState{root: {}},
		runIDs:   map[string]int{},
	}
	for i, e := range evs {
		c.event(i, e)
	}
	// Every started child must have ended (invariant 2).
	var open []string
	for sid, s := range c.sessions {
		if sid != root && !s.ended {
			open = append(open, sid)
		}
	}
	slices.Sort(open)
	for _, sid := range open {
		c.fail(2, -1, "child %s has no spawn_session_end", sid)
	}
	if len(c.out) == 0 {
		return nil
	}
	return &Error{Violations: c.out}
}

func (c *checker) event(i int, e event.Event) {
	if e == nil {
		c.fail(6, i, "nil event")
		return
	}
	sid, inner := c.root, e
	if w, ok := e.(event.Subagent); ok {
		if w.Event == nil {
			c.fail(5, i, "subagent wrapper of %s wraps no event", w.ChildSessionID)
			return
		}
		if _, nested := w.Event.(event.Subagent); nested {
			c.fail(5, i, "subagent wrapper of %s wraps another subagent event", w.ChildSessionID)
			return
		}
		sid, inner = w.ChildSessionID, w.Event
		s, ok := c.sessions[sid]
		if !ok || sid == c.root {
			if sid == c.root {
				c.fail(5, i, "subagent wrapper names the stream owner %s as child_session_id", sid)
			} else {
				c.fail(1, i, "%s event of session %s before its spawn_session_start", inner.Kind(), sid)
			}
			return
		}
		if w.ParentSessionID != s.parent {
			c.fail(5, i, "wrapper of %s has parent_session_id %s, want %s", sid, w.ParentSessionID, s.parent)
		}
		if w.Depth != s.depth {
			c.fail(4, i, "wrapper of %s has depth %d, want %d", sid, w.Depth, s.depth)
		}
		if !slices.Equal(w.Path, s.path) {
			c.fail(5, i, "wrapper of %s has path %v, want %v", sid, w.Path, s.path)
		}
	}
	s := c.sessions[sid]
	if s.ended {
		c.fail(2, i, "%s event of session %s after its spawn_session_end", inner.Kind(), sid)
	}
	if _, custom := inner.(event.Custom); custom {
		return
	}
	// Invariant 6: run_started first, a terminal event last.
	if s.terminal {
		c.fail(6, i, "%s event of session %s after its stream_complete/run_error", inner.Kind(), sid)
	}
	if !s.seen {
		s.seen = true
		if _, ok := inner.(event.RunStarted); !ok {
			c.fail(6, i, "first event of session %s is %s, not run_started", sid, inner.Kind())
		}
	}

	switch v := inner.(type) {
	case event.RunStarted:
		if s.runStarted {
			c.fail(6, i, "second run_started in session %s", sid)
		}
		s.runStarted = true
		if v.SessionID != sid {
			c.fail(5, i, "run_started names session %s but was produced by %s", v.SessionID, sid)
		}
		if v.ParentSessionID != "" && v.ParentSessionID != s.parent {
			c.fail(5, i, "run_started of %s names parent %s, want %s", sid, v.ParentSessionID, s.parent)
		}
		if v.RunID != "" {
			if j, dup := c.runIDs[v.RunID]; dup {
				c.fail(9, i, "run id %s already used at event %d", v.RunID, j)
			} else {
				c.runIDs[v.RunID] = i
			}
		}
	case event.StreamComplete, event.RunError:
		s.terminal = true
	case event.SpawnSessionStart:
		c.start(i, sid, s, v)
	case event.SpawnSessionEnd:
		c.end(i, sid, s, v)
	}
}

func (c *checker) start(i int, sid string, s *sessionState, v event.SpawnSessionStart) {
	child := v.ChildSessionID
	if child == "" {
		c.fail(9, i, "spawn_session_start without child_session_id")
		return
	}
	if v.ParentSessionID != sid {
		c.fail(1, i, "spawn_session_start of %s names parent %s but appears in the stream of %s", child, v.ParentSessionID, sid)
	}
	if child == c.root {
		c.fail(9, i, "spawn_session_start reuses the root session id %s", child)
		return
	}
	if prev, dup := c.sessions[child]; dup {
		if prev.parent == sid && prev.ended && v.Metadata[metaResumed] != nil {
			// A finished child continued in its session (spawn.Resume):
			// a new run of it, which starts and ends again.
			prev.ended, prev.seen, prev.runStarted, prev.terminal = false, false, false, false
			s.open++
			return
		}
		if prev.parent == sid {
			c.fail(1, i, "second spawn_session_start for session %s", child)
		} else {
			c.fail(9, i, "spawn_session_start reuses session id %s (already a child of %s)", child, prev.parent)
		}
		return
	}
	if v.Depth != s.depth+1 {
		c.fail(4, i, "spawn_session_start of %s has depth %d, want %d (parent %s at depth %d)", child, v.Depth, s.depth+1, sid, s.depth)
	}
	path := make([]string, len(s.path)+1)
	copy(path, s.path)
	path[len(s.path)] = child
	c.sessions[child] = &sessionState{parent: sid, depth: s.depth + 1, path: path}
	s.open++
}

func (c *checker) end(i int, sid string, s *sessionState, v event.SpawnSessionEnd) {
	child := v.ChildSessionID
	cs, ok := c.sessions[child]
	if !ok || child == c.root {
		c.fail(2, i, "spawn_session_end for %s, which was never started", child)
		return
	}
	if cs.parent != sid {
		c.fail(2, i, "spawn_session_end of %s appears in the stream of %s, not of its parent %s", child, sid, cs.parent)
	}
	if v.ParentSessionID != cs.parent {
		c.fail(2, i, "spawn_session_end of %s names parent %s, want %s", child, v.ParentSessionID, cs.parent)
	}
	if v.Depth != cs.depth {
		c.fail(4, i, "spawn_session_end of %s has depth %d, want %d", child, v.Depth, cs.depth)
	}
	if cs.ended {
		c.fail(2, i, "second spawn_session_end for %s", child)
		return
	}
	switch v.StopReason {
	case event.StopCompleted, event.StopAborted, event.StopError, event.StopMaxTokens, event.StopRefusal, event.StopInterrupted, event.StopContextExhausted, event.StopBudget:
	default:
		c.fail(2, i, "spawn_session_end of %s has stop_reason %q", child, v.StopReason)
	}
	if cs.open > 0 {
		c.fail(2, i, "spawn_session_end of %s while %d of its children are still open", child, cs.open)
	}
	cs.ended = true
	if cs.parent == sid {
		s.open--
	}
}

// Collect returns a sink that keeps every event it receives, safe for
// concurrent use, and a function returning a copy of what it kept so far.
func Collect() (event.Sink, func() []event.Event) {
	var (
		mu  sync.Mutex
		evs []event.Event
	)
	sink := event.SinkFunc(func(e event.Event) {
		mu.Lock()
		evs = append(evs, e)
		mu.Unlock()
	})
	return sink, func() []event.Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(evs)
	}
}
