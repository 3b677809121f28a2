package durable

import (
	"errors"
	"sync"
)

// errRunEnded is the error of a local-activity turn whose session's run
// ended (its End ran) before the turn wrote: it writes nothing.
var errRunEnded = errors.New("the session's run ended before this turn wrote")

// turnFence keeps the writes of a turn run as a local activity
// (SessionInput.TurnLocal) from landing after its session's end. A
// cancel of the workflow lets a running local activity go at once (the
// SDK answers it cancelled) while its Go code goes on: the workflow then
// writes the session's end, and the turn, if its model answered first,
// would write its message and events after that end. Local activities
// run on the worker that runs their workflow task, the End among them,
// so the fence is this process's: a turn writes under its run's lock
// and only while the run has not ended; End marks the run ended under
// that lock, after a write in flight. A run is kept only while a turn of
// it is in flight.
type turnFence struct {
	mu   sync.Mutex
	runs map[runKey]*fencedRun
}

// runKey names one run of one session.
type runKey struct{ session, run string }

// fencedRun is a run with turns in flight.
type fencedRun struct {
	mu    sync.Mutex // held by a turn's writes and by end
	ended bool
	turns int // in flight; guarded by turnFence.mu
}

// enter counts a turn of run k in flight until the returned leave.
func (f *turnFence) enter(k runKey) (r *fencedRun, leave func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = map[runKey]*fencedRun{}
	}
	r = f.runs[k]
	if r == nil {
		r = &fencedRun{}
		f.runs[k] = r
	}
	r.turns++
	return r, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.turns--; r.turns == 0 {
			delete(f.runs, k)
		}
	}
}

// write runs fn, the turn's writes, unless the run has ended; an end
// that comes meanwhile waits for it.
func (r *fencedRun) write(fn func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return errRunEnded
	}
	return fn()
}

// end marks run k ended, after any turn's write in flight: its turns
// write nothing more.
func (f *turnFence) end(k runKey) {
	f.mu.Lock()
	r := f.runs[k]
	f.mu.Unlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	r.ended = true
	r.mu.Unlock()
}
