package spawn

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/agentpool/agentpool/event"
)

// The limits of a run that refuse a spawn (max_depth, max_spawns), how a
// refusal is told (LimitError, the spawn_refused event, one warning per
// limit and run in the log), and reservations of the spawn budget for
// spawns that must happen together (a team's members).

// EventSpawnRefused is the event_type of the custom event that tells the
// stream a spawn was refused by a limit (docs/spec/EVENTS.md §2). Its
// event_data: node, limit ("max_depth" or "max_spawns"), max, mechanism,
// error, and tool_call_id (when a tool call asked) and depth (max_depth:
// the depth the child would have had) when they apply.
const EventSpawnRefused = "spawn_refused"

// Limit names, as in the manifest.
const (
	LimitMaxDepth  = "max_depth"
	LimitMaxSpawns = "max_spawns"
)

// LimitError is the error of a spawn (or a Reserve) that a limit of the run
// refused. errors.Is(err, ErrDepthLimit) or ErrSpawnBudget holds.
type LimitError struct {
	Node  string // the node that was not spawned (Reserve: the one reserving)
	Limit string // LimitMaxDepth or LimitMaxSpawns
	Max   int    // the limit's value
	// Depth is the depth the child would have had (max_depth); RootDepth
	// is the depth of the run's root session, more than 0 when the run
	// continues a child session: depth counts from the tree's root.
	Depth, RootDepth int
	// Wanted and Left are the spawns a Reserve asked for and the ones the
	// run had left (0 and 0 for a single spawn).
	Wanted, Left int
}

func (e *LimitError) Error() string {
	switch {
	case e.Limit == LimitMaxDepth && e.RootDepth > 0:
		return fmt.Sprintf("cannot spawn %s: %v (max_depth %d); this run continues a session at depth %d of its tree, and depth counts from the tree's root",
			e.Node, ErrDepthLimit, e.Max, e.RootDepth)
	case e.Limit == LimitMaxDepth:
		return fmt.Sprintf("cannot spawn %s: %v (max_depth %d)", e.Node, ErrDepthLimit, e.Max)
	case e.Wanted > 0:
		return fmt.Sprintf("cannot reserve %d spawns for %s: too few left in the run's spawn budget (max_spawns %d, %d left)", e.Wanted, e.Node, e.Max, e.Left)
	default:
		return fmt.Sprintf("cannot spawn %s: %v (max_spawns %d)", e.Node, ErrSpawnBudget, e.Max)
	}
}

// Is makes errors.Is(err, ErrDepthLimit) and ErrSpawnBudget hold.
func (e *LimitError) Is(target error) bool {
	return (target == ErrDepthLimit && e.Limit == LimitMaxDepth) || (target == ErrSpawnBudget && e.Limit == LimitMaxSpawns)
}

// checkDepth refuses a child of node deeper than max_depth, warning once
// per run.
func (rt *Runtime) checkDepth(parent *Invocation, node Node, depth int) error {
	if depth <= rt.limits.MaxDepth {
		return nil
	}
	if parent.run.depthWarned.CompareAndSwap(false, true) {
		rt.log.Warn("depth limit reached; deeper spawns of this run are refused", "max_depth", rt.limits.MaxDepth, "session", parent.Session.ID)
	}
	return &LimitError{Node: node.Name(), Limit: LimitMaxDepth, Max: rt.limits.MaxDepth, Depth: depth, RootDepth: parent.run.rootDepth}
}

// takeSpawn takes one spawn of the run's budget: from r when it holds one
// for this run, else from what is left, warning once per run when nothing
// is.
func (rt *Runtime) takeSpawn(ctx context.Context, parent *Invocation, node Node, r *Reservation) error {
	if r.use(parent.run) {
		return nil
	}
	_, ok, err := rt.take(ctx, parent, 1)
	if err != nil {
		return fmt.Errorf("cannot spawn %s: %w", node.Name(), err)
	}
	if ok {
		return nil
	}
	if parent.run.budgetWarned.CompareAndSwap(false, true) {
		rt.log.Warn("spawn budget of the run exhausted; further spawns are refused", "max_spawns", rt.limits.MaxSpawns, "session", parent.Session.ID)
	}
	return &LimitError{Node: node.Name(), Limit: LimitMaxSpawns, Max: rt.limits.MaxSpawns}
}

// spawnBudget is implemented by an Env whose sessions are runs of their
// own (a durable engine's child workflows, on any worker) and that keeps
// the budget (max_spawns) of the run that spawned them where all of them
// reach it, so that children running at the same time count against one
// budget as they do in this process. Spawn and Reserve take spawns through
// it, Release gives them back; an Env without it counts in the
// invocation's run state. Only the durable engine implements it: its
// contract, with the methods' documentation, is
// internal/durablewire.SpawnBudget, which has this method set (the
// durablewire tests check that a run under an Env uses it).
type spawnBudget interface {
	TakeSpawns(ctx context.Context, inv *Invocation, n, limit int) (left int, ok bool, err error)
	ReturnSpawns(ctx context.Context, inv *Invocation, n int)
}

// take takes n spawns of parent's run budget, through its Env when that
// keeps the budget.
func (rt *Runtime) take(ctx context.Context, parent *Invocation, n int) (left int, ok bool, err error) {
	if b, isB := parent.Env.(spawnBudget); isB {
		return b.TakeSpawns(ctx, parent, n, rt.limits.MaxSpawns)
	}
	left, ok = parent.run.take(n, rt.limits.MaxSpawns)
	return left, ok, nil
}

// take takes n spawns of the run's budget of limit spawns, all or none;
// left is what was left before.
func (r *runState) take(n, limit int) (left int, ok bool) {
	for {
		used := r.spawns.Load()
		left = limit - int(used)
		if n > left {
			return max(left, 0), false
		}
		if r.spawns.CompareAndSwap(used, used+int64(n)) {
			return left, true
		}
	}
}

// Reservation is spawns of a run's budget (max_spawns) taken ahead, for
// spawns that must all happen or none (a team takes one per member before
// it starts any). Spawns whose Request carries it use it rather than what
// is left of the budget. Safe for concurrent use.
type Reservation struct {
	inv  *Invocation // the reserving session's (its run, its Env)
	left atomic.Int64
}

// Reserve takes n spawns of the run's budget for spawns that parent's node
// (named node, for the error) is about to make: all n, or none and a
// *LimitError saying how many were left (another error: the budget could
// not be reached). Release what was not used.
func Reserve(ctx context.Context, parent *Invocation, node string, n int) (*Reservation, error) {
	limit := parent.Runtime.limits.MaxSpawns
	left, ok, err := parent.Runtime.take(ctx, parent, n)
	if err != nil {
		return nil, fmt.Errorf("cannot reserve %d spawns for %s: %w", n, node, err)
	}
	if !ok {
		parent.Runtime.log.Warn("spawn budget of the run too small for a reservation; none of its spawns start",
			"node", node, "wanted", n, "left", left, "max_spawns", limit, "session", parent.Session.ID)
		return nil, &LimitError{Node: node, Limit: LimitMaxSpawns, Max: limit, Wanted: n, Left: left}
	}
	r := &Reservation{inv: parent}
	r.left.Store(int64(n))
	return r, nil
}

// use takes one reserved spawn for run; false when r is nil, belongs to
// another run or is used up.
func (r *Reservation) use(run *runState) bool {
	if r == nil || r.inv.run != run {
		return false
	}
	for {
		n := r.left.Load()
		if n <= 0 {
			return false
		}
		if r.left.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// Release gives the reserved spawns that were not used back to the run's
// budget; the reservation holds none afterwards. ctx is the reserving
// session's (its branch's, under an Env). Nil-safe.
func (r *Reservation) Release(ctx context.Context) {
	if r == nil {
		return
	}
	n := r.left.Swap(0)
	if n <= 0 {
		return
	}
	if b, ok := r.inv.Env.(spawnBudget); ok {
		b.ReturnSpawns(ctx, r.inv, int(n))
		return
	}
	r.inv.run.spawns.Add(-n)
}

// ReportRefused tells the stream that a limit refused a spawn: when err is
// a *LimitError it emits a spawn_refused event on parent's sink, for
// req.Node (else the error's node), and reports true. The delegation
// mechanisms (task, workers, teams) call it; Spawn itself emits nothing
// for a child it did not create (docs/spec/EVENTS.md §3, invariant 3), so a
// program that spawns by hand reports its own refusals.
func ReportRefused(parent *Invocation, req Request, err error) bool {
	var le *LimitError
	if !errors.As(err, &le) {
		return false
	}
	node := le.Node
	if req.Node != nil {
		node = req.Node.Name()
	}
	data := map[string]any{
		"node": node, "limit": le.Limit, "max": le.Max, "mechanism": string(req.Mechanism), "error": err.Error(),
	}
	if req.ToolCallID != "" {
		data["tool_call_id"] = req.ToolCallID
	}
	if le.Limit == LimitMaxDepth {
		data["depth"] = le.Depth
	}
	parent.Sink.Emit(event.Custom{EventType: EventSpawnRefused, Source: "spawn", EventData: data})
	return true
}
