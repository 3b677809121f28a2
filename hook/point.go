package hook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sync"
	"time"
)

// DefaultEmitTimeout bounds how long an emit waits for one listener unless
// the listener was registered WithTimeout.
const DefaultEmitTimeout = 30 * time.Second

// Kind tells emits from seams.
type Kind string

// The two kinds of hook point (docs/spec/HOOKS.md §1).
const (
	KindEmit Kind = "emit" // observe-only
	KindSeam Kind = "seam" // interception chain
)

// Func is a listener of an emit point. A returned error is logged; it
// changes nothing else.
type Func[P any] func(ctx context.Context, p P) error

// Next calls the rest of a seam's chain (later listeners, then the
// runtime's default) and returns its decision.
type Next[In, Out any] func(ctx context.Context, in In) Out

// SeamFunc is a listener of a seam. It may call next (once, or with a
// changed input), change what next returned, or answer without calling
// next to veto or take over.
type SeamFunc[In, Out any] func(ctx context.Context, in In, next Next[In, Out]) Out

// Option configures one registration.
type Option func(*regOpts)

type regOpts struct {
	agent   string
	timeout time.Duration
	name    string
	early   bool
}

// ForAgent scopes a listener to one agent: it fires only for that agent's
// runs and for the delegations it starts (subagent/start and subagent/end
// whose parent is that agent).
func ForAgent(name string) Option { return func(o *regOpts) { o.agent = name } }

// WithTimeout sets how long an emit waits for this listener (default
// DefaultEmitTimeout); on a seam it sets a deadline on the listener's
// context. d <= 0 keeps the default.
func WithTimeout(d time.Duration) Option { return func(o *regOpts) { o.timeout = d } }

// WithName names the listener in logs.
func WithName(name string) Option { return func(o *regOpts) { o.name = name } }

// Early puts a listener ahead of the listeners added without it (after the
// early ones added before it). A seam's chain runs in order and a listener
// that answers ends it, so a policy that must get its say before a human
// is asked (the command bridge's PermissionRequest hooks on
// approval/request) is added Early, whenever it is added.
func Early() Option { return func(o *regOpts) { o.early = true } }

// core is what the points of one registry share.
type core struct {
	log     *slog.Logger
	timeout time.Duration
	wg      sync.WaitGroup // emit listeners still running (abandoned after their timeout)
	// fault, when set, records a listener that panicked, failed or timed
	// out (besides the log line); the Registry records it in the event log
	// of the session the point fired for.
	fault func(ctx context.Context, f Fault)
}

// Fault kinds.
const (
	FaultPanic   = "panic"
	FaultError   = "error"
	FaultTimeout = "timeout"
)

// Fault describes a listener that was skipped: it panicked, returned an
// error (emits) or was still running at its timeout (emits).
type Fault struct {
	Point    string `json:"point"`
	Listener string `json:"listener"`
	Kind     string `json:"kind"` // FaultPanic, FaultError or FaultTimeout
	Error    string `json:"error"`
}

// report hands a fault to the recorder, if any. A recorder that panics is
// logged; it never reaches the run.
func (c *core) report(ctx context.Context, f Fault) {
	if c == nil || c.fault == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			c.logger().Error("hook fault recorder panicked", "point", f.Point, "panic", r)
		}
	}()
	c.fault(ctx, f)
}

func (c *core) logger() *slog.Logger {
	if c == nil || c.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.log
}

type listener[F any] struct {
	id  uint64
	fn  F
	opt regOpts
}

// chain is the ordered, copy-on-write list of a point's listeners.
type chain[F any] struct {
	mu     sync.Mutex
	nextID uint64
	ls     []listener[F] // never mutated in place: replaced on change
}

func (c *chain[F]) add(fn F, opts []Option) func() {
	var o regOpts
	for _, opt := range opts {
		opt(&o)
	}
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	at := len(c.ls)
	if o.early {
		at = 0
		for at < len(c.ls) && c.ls[at].opt.early {
			at++
		}
	}
	ls := make([]listener[F], 0, len(c.ls)+1)
	ls = append(ls, c.ls[:at]...)
	ls = append(ls, listener[F]{id: id, fn: fn, opt: o})
	c.ls = append(ls, c.ls[at:]...)
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			ls := make([]listener[F], 0, len(c.ls))
			for _, l := range c.ls {
				if l.id != id {
					ls = append(ls, l)
				}
			}
			c.ls = ls
		})
	}
}

func (c *chain[F]) list() []listener[F] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ls
}

func (c *chain[F]) len() int { return len(c.list()) }

// matches reports whether a listener scoped with opt applies to agents.
func (o regOpts) matches(agents []string) bool {
	if o.agent == "" {
		return true
	}
	for _, a := range agents {
		if a == o.agent {
			return true
		}
	}
	return false
}

func (o regOpts) label(i int) string {
	if o.name != "" {
		return o.name
	}
	return fmt.Sprintf("#%d", i)
}

// Emit is an observe-only hook point with payload P. Listeners are called
// one by one, in registration order, each with its own copy of the payload
// and inside its own containment: a panic, a returned error or a listener
// still running at its timeout is logged and skipped, and the next listener
// is called. Fire returns when every listener returned or was abandoned.
type Emit[P any] struct {
	name   string
	core   *core
	clone  func(P) P        // per-listener copy; nil: P is copied by value
	agents func(P) []string // agents a payload belongs to (for ForAgent)
	ls     chain[Func[P]]
}

// NewEmit returns a standalone emit point (a Registry builds its own).
// clone gives each listener its own copy of the payload (nil when a value
// copy suffices); agents names the agents a payload belongs to for
// ForAgent scoping (nil: scoped listeners never fire).
func NewEmit[P any](name string, log *slog.Logger, clone func(P) P, agents func(P) []string) *Emit[P] {
	return &Emit[P]{name: name, core: &core{log: log, timeout: DefaultEmitTimeout}, clone: clone, agents: agents}
}

// Name returns the point's name, e.g. "subagent/end".
func (e *Emit[P]) Name() string { return e.name }

// Register adds a listener; the returned function removes it.
func (e *Emit[P]) Register(fn Func[P], opts ...Option) (remove func()) {
	if fn == nil {
		panic("hook: Register of a nil listener on " + e.name)
	}
	return e.ls.add(fn, opts)
}

// Len reports how many listeners are registered.
func (e *Emit[P]) Len() int { return e.ls.len() }

// Fire calls every listener that applies to p. The listeners' context is
// not cancelled with ctx (an ending run is still reported) but carries a
// deadline: the listener's timeout.
func (e *Emit[P]) Fire(ctx context.Context, p P) {
	ls := e.ls.list()
	if len(ls) == 0 {
		return
	}
	var agents []string
	if e.agents != nil {
		agents = e.agents(p)
	}
	base := context.WithoutCancel(ctx)
	for i, l := range ls {
		if !l.opt.matches(agents) {
			continue
		}
		e.call(base, i, l, p)
	}
}

type emitDone struct {
	err   error
	panic any
	stack []byte
}

func (e *Emit[P]) call(ctx context.Context, i int, l listener[Func[P]], p P) {
	timeout := l.opt.timeout
	if timeout <= 0 {
		timeout = e.core.timeout
	}
	if timeout <= 0 {
		timeout = DefaultEmitTimeout
	}
	log := e.core.logger()
	payload, ok := e.copyOf(p)
	if !ok {
		return
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan emitDone, 1)
	e.core.wg.Add(1)
	go func() {
		defer e.core.wg.Done()
		var d emitDone
		defer func() {
			if r := recover(); r != nil {
				d = emitDone{panic: r, stack: debug.Stack()}
			}
			done <- d
		}()
		d.err = l.fn(lctx, payload)
	}()
	select {
	case d := <-done:
		switch {
		case d.panic != nil:
			log.Error("hook listener panicked; skipped", "point", e.name, "listener", l.opt.label(i), "panic", d.panic, "stack", string(d.stack))
			e.core.report(ctx, Fault{Point: e.name, Listener: l.opt.label(i), Kind: FaultPanic, Error: fmt.Sprint(d.panic)})
		case d.err != nil:
			log.Warn("hook listener failed; skipped", "point", e.name, "listener", l.opt.label(i), "err", d.err)
			e.core.report(ctx, Fault{Point: e.name, Listener: l.opt.label(i), Kind: FaultError, Error: d.err.Error()})
		}
	case <-lctx.Done():
		log.Warn("hook listener timed out; skipped", "point", e.name, "listener", l.opt.label(i), "timeout", timeout)
		e.core.report(ctx, Fault{Point: e.name, Listener: l.opt.label(i), Kind: FaultTimeout, Error: fmt.Sprintf("still running after %s", timeout)})
	}
}

// copyOf gives a listener its own payload; a failing copy is logged and the
// listener skipped.
func (e *Emit[P]) copyOf(p P) (out P, ok bool) {
	if e.clone == nil {
		return p, true
	}
	defer func() {
		if r := recover(); r != nil {
			e.core.logger().Error("hook payload copy failed; listener skipped", "point", e.name, "panic", r)
			ok = false
		}
	}()
	return e.clone(p), true
}

// Seam is an interception point: an ordered chain of listeners (a
// waterfall) in front of the runtime's default decision. A listener that
// panics is logged and skipped: the chain goes on as if it had called next
// with its input (or, when it had already called next, with what next
// returned).
type Seam[In, Out any] struct {
	name   string
	core   *core
	clone  func(In) In // per-listener copy of the input; nil: value copy
	agents func(In) []string
	ls     chain[SeamFunc[In, Out]]
}

// NewSeam returns a standalone seam (a Registry builds its own); see
// NewEmit for clone and agents.
func NewSeam[In, Out any](name string, log *slog.Logger, clone func(In) In, agents func(In) []string) *Seam[In, Out] {
	return &Seam[In, Out]{name: name, core: &core{log: log, timeout: DefaultEmitTimeout}, clone: clone, agents: agents}
}

// Name returns the point's name, e.g. "tools/pre-execute".
func (s *Seam[In, Out]) Name() string { return s.name }

// Use appends a listener to the chain; the returned function removes it.
func (s *Seam[In, Out]) Use(fn SeamFunc[In, Out], opts ...Option) (remove func()) {
	if fn == nil {
		panic("hook: Use of a nil listener on " + s.name)
	}
	return s.ls.add(fn, opts)
}

// Len reports how many listeners are in the chain.
func (s *Seam[In, Out]) Len() int { return s.ls.len() }

// Run passes in through the chain of listeners that apply to it; the last
// next is final, the runtime's default decision.
func (s *Seam[In, Out]) Run(ctx context.Context, in In, final Next[In, Out]) Out {
	all := s.ls.list()
	if len(all) == 0 {
		return final(ctx, in)
	}
	var agents []string
	if s.agents != nil {
		agents = s.agents(in)
	}
	ls := make([]listener[SeamFunc[In, Out]], 0, len(all))
	idx := make([]int, 0, len(all))
	for i, l := range all {
		if l.opt.matches(agents) {
			ls = append(ls, l)
			idx = append(idx, i)
		}
	}
	var step func(k int) Next[In, Out]
	step = func(k int) Next[In, Out] {
		if k == len(ls) {
			return final
		}
		return func(ctx context.Context, in In) Out {
			return s.call(ctx, idx[k], ls[k], in, step(k+1))
		}
	}
	return step(0)(ctx, in)
}

func (s *Seam[In, Out]) call(ctx context.Context, i int, l listener[SeamFunc[In, Out]], in In, next Next[In, Out]) (out Out) {
	var (
		called  bool
		nextOut Out
	)
	tracked := func(ctx context.Context, in In) Out {
		o := next(ctx, in)
		called, nextOut = true, o
		return o
	}
	own, ok := s.copyOf(in)
	if !ok {
		return next(ctx, in)
	}
	lctx := ctx
	if l.opt.timeout > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, l.opt.timeout)
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			s.core.logger().Error("hook listener panicked; skipped", "point", s.name, "listener", l.opt.label(i), "panic", r, "stack", string(debug.Stack()))
			s.core.report(ctx, Fault{Point: s.name, Listener: l.opt.label(i), Kind: FaultPanic, Error: fmt.Sprint(r)})
			if called {
				out = nextOut
				return
			}
			out = next(ctx, in)
		}
	}()
	return l.fn(lctx, own, tracked)
}

func (s *Seam[In, Out]) copyOf(in In) (out In, ok bool) {
	if s.clone == nil {
		return in, true
	}
	defer func() {
		if r := recover(); r != nil {
			s.core.logger().Error("hook input copy failed; listener skipped", "point", s.name, "panic", r)
			ok = false
		}
	}()
	return s.clone(in), true
}

// PointInfo describes a hook point (for the catalog, docs/catalog.md).
type PointInfo struct {
	Name     string
	Kind     Kind
	Doc      string
	Payload  reflect.Type
	Decision reflect.Type // nil for emits
}

// ErrNoSession is returned by helpers that need a session in the context.
var ErrNoSession = errors.New("hook: no session in context")
