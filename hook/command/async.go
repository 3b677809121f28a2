// Async hooks ("async": true): started in the background, never waited
// for by the event.

package command

import (
	"context"
	"sync"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/spawn"
)

// asyncHooks tracks the background hooks of a bridge, so that none
// outlives it: closing waits for them (until its context ends, then kills
// them).
type asyncHooks struct {
	ctx    context.Context // cancelled (killing what runs) by stop
	stop   context.CancelFunc
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (a *asyncHooks) init() { a.ctx, a.stop = context.WithCancel(context.Background()) }

// add reserves a place for one more background hook; false once closed.
func (a *asyncHooks) add() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.wg.Add(1)
	return true
}

func (a *asyncHooks) close(ctx context.Context) {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	done := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		a.stop() // kills their process trees
		<-done
	}
	a.stop()
}

// startAsync runs one async hook in the background, as Claude Code does:
// the event goes on at once and the hook cannot block it. When it ends its
// run is recorded in the session's log (not streamed: the run may be over)
// and its additionalContext or systemMessage is given to the session's next
// model request, if the session still runs. Its timeout applies (Claude
// Code does not bound an async hook; agentpool bounds every process it
// starts), and closing the registry ends it.
func (b *Bridge) startAsync(ctx context.Context, f firing, r ran, stdin []byte) {
	if !b.async.add() {
		return
	}
	inv := spawn.InvocationFrom(ctx)
	go func() {
		defer b.async.wg.Done()
		rctx := b.async.ctx
		if inv != nil {
			rctx = spawn.WithInvocation(rctx, inv)
		}
		r.res = b.run(rctx, r.h, stdin, f.env)
		r.v = interpret(f.event, r.res)
		b.logRun(f.event, r)
		rec := b.runRecord(f, r)
		rec.Async = true
		b.record(rctx, EventHookRun, rec, true)
		if inv == nil {
			return
		}
		msg := joinNonEmpty([]string{r.v.context, r.v.systemMessage})
		if msg == "" {
			return
		}
		if err := hook.Inject(rctx, inv.Session.ID, msg); err != nil {
			b.log.Debug("async hook output not delivered: the session has ended", "event", f.event, "command", r.h.command)
		}
	}()
}
