package record

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/session"
)

// Processor records root runs into a store: Open gives each run its
// Recorder. It also hands the runs to its watchers (Watch), such as a
// Projection; a run nobody watches costs the store's work only. Use New.
type Processor struct {
	store session.Store
	log   *slog.Logger

	mu       sync.Mutex
	watchers map[int]Watcher // under mu
	nextID   int             // under mu
	// current is the list of watchers, made again on every change; nil
	// when there is none. A run reads it once, at its first event.
	current atomic.Pointer[[]Watcher]
}

// Watcher consumes the runs a Processor records.
type Watcher interface {
	// Observe takes one event of a watched run (owner is its root
	// session): every event of the run, in its order, each after it was
	// stored, one at a time. It is called by a goroutine of the run (a
	// producer, or Sync), holding no lock of the run, and possibly after
	// the Emit of that event returned (see Recorder.Sync); no order holds
	// between what different watchers and the run's sink have been given.
	// It should not block (it holds up the goroutine that delivers, and
	// when the run's log is full, the run), and must not emit into the
	// run nor call its Sync.
	Observe(ctx context.Context, owner string, e event.Event)
}

// RunWatcher is a Watcher that keeps state for each run it watches, so
// that what it finds by the run's owner (its entry for the run, a
// session's state) is found once per run and not once per event: the
// recorder of a run calls WatchRun once, before it hands the watcher the
// run's first event, and from then on hands that run's events to the
// returned Watcher instead, under the rules of Observe. WatchRun is called
// by the goroutine that delivers (no lock of the run held) and must not
// block.
type RunWatcher interface {
	Watcher
	WatchRun(owner string) Watcher
}

// New returns a processor that records into store (nil: nowhere) and logs
// to log (nil: nowhere).
func New(store session.Store, log *slog.Logger) *Processor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Processor{store: store, log: log, watchers: map[int]Watcher{}}
}

// Store returns the processor's store (nil when it has none).
func (p *Processor) Store() session.Store { return p.store }

// Watch hands w every run whose first event is recorded from now on, to the
// run's end; runs that started earlier are not its. The returned function
// stops it for later runs (a run that w watches goes on to its end).
func (p *Processor) Watch(w Watcher) (unwatch func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.nextID
	p.nextID++
	p.watchers[n] = w
	p.publish()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.watchers, n)
		p.publish()
	}
}

// publish makes current the list of watchers. Under p.mu.
func (p *Processor) publish() {
	if len(p.watchers) == 0 {
		p.current.Store(nil)
		return
	}
	ws := make([]Watcher, 0, len(p.watchers))
	for _, w := range p.watchers {
		ws = append(ws, w)
	}
	p.current.Store(&ws)
}

// Open starts the recording of the root run owned by session owner: the
// returned Recorder is the run's sink, next (nil: none) gets the run's
// stream from it. ctx carries the values the store calls see; its
// cancellation does not stop the recording (what a cancelled run did is
// kept).
func (p *Processor) Open(ctx context.Context, owner string, next event.Sink) *Recorder {
	r := &Recorder{p: p, ctx: detach.Context(ctx), owner: owner}
	r.cond.L = &r.mu
	if next != nil {
		r.addConsumer(&consumer{sink: next})
	}
	return r
}
