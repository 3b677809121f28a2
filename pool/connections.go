package pool

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
)

// EventConnectionError is the custom event of a connection that could not
// forward an output: {source, target, error}.
const EventConnectionError = "connection_error"

// connected is a node with connections (AgentPool's `connections:`): when
// a run of it completes, its final output is the prompt of each target,
// run in a child session of the run. The targets run before the node's
// stream_complete is sent, so that the session's stream ends after its
// children, as every session's does; the run's result is the node's own.
type connected struct {
	spawn.Node
	conns []*connState
}

// connState is one connection with the counters its conditions read,
// kept for the pool's life (as AgentPool keeps them per connection).
type connState struct {
	config.Connection
	start time.Time

	mu      sync.Mutex
	count   int     // outputs seen
	cost    float64 // their total cost
	stopped bool    // a stop or exit condition was met
}

func newConnected(n spawn.Node, conns []config.Connection) spawn.Node {
	if len(conns) == 0 {
		return n
	}
	c := &connected{Node: n}
	now := time.Now()
	for _, cn := range conns {
		c.conns = append(c.conns, &connState{Connection: cn, start: now})
	}
	return c
}

// holdFinal passes events on but keeps the node's own stream_complete.
type holdFinal struct {
	event.Sink
	final event.Event
}

func (h *holdFinal) Emit(e event.Event) {
	if _, ok := e.(event.StreamComplete); ok && h.final == nil {
		h.final = e
		return
	}
	h.Sink.Emit(e)
}

// Run runs the node, then forwards its output.
func (c *connected) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	sink := inv.Sink
	hold := &holdFinal{Sink: sink}
	inv.Sink = hold
	res := c.Node.Run(ctx, inv)
	inv.Sink = sink
	if res.StopReason == event.StopCompleted && res.Output != "" && ctx.Err() == nil {
		c.forward(ctx, inv, res)
	}
	if hold.final != nil {
		sink.Emit(hold.final)
	}
	return res
}

// forward runs the targets of the connections whose conditions let the
// output through: those that wait one after the other, the others at the
// same time; all have ended when it returns.
func (c *connected) forward(ctx context.Context, inv *spawn.Invocation, res spawn.Result) {
	var wg sync.WaitGroup
	for _, cs := range c.conns {
		if !cs.admit(res) {
			continue
		}
		send := func() { c.send(ctx, inv, cs, res.Output) }
		if cs.Wait {
			send()
		} else {
			wg.Go(send)
		}
	}
	wg.Wait()
}

func (c *connected) send(ctx context.Context, inv *spawn.Invocation, cs *connState, output string) {
	if cs.Delay > 0 {
		t := time.NewTimer(cs.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	fail := func(err error) {
		inv.Runtime.Logger().Warn("connection", "source", c.Name(), "target", cs.Target, "err", err)
		inv.Sink.Emit(event.Custom{EventType: EventConnectionError, Source: "pool", EventData: map[string]any{
			"source": c.Name(), "target": cs.Target, "error": err.Error(),
		}})
	}
	node, ok := inv.Runtime.Lookup(cs.Target)
	if !ok {
		fail(fmt.Errorf("unknown node %q", cs.Target))
		return
	}
	_, err := spawn.Spawn(ctx, inv, spawn.Request{
		Node: node, Prompt: output, Description: "output of " + c.Name(), Mechanism: event.MechanismSpawn,
	})
	if err != nil {
		fail(err)
	}
}

// admit counts the output and reports whether it is forwarded: not after
// a stop (or exit) condition was met, nor when the filter rejects it.
func (cs *connState) admit(res spawn.Result) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.stopped {
		return false
	}
	cs.count++
	cs.cost += res.Cost
	for _, c := range []*config.Condition{cs.Stop, cs.Exit} {
		if c != nil && cs.met(c, res) {
			cs.stopped = true
			return false
		}
	}
	return cs.Filter == nil || cs.met(cs.Filter, res)
}

// met evaluates a condition for an output (under cs.mu).
func (cs *connState) met(c *config.Condition, res spawn.Result) bool {
	switch c.Type {
	case config.CondWordMatch:
		text := res.Output
		if !c.CaseSensitive {
			text = strings.ToLower(text)
		}
		hits := 0
		for _, w := range c.Words {
			if !c.CaseSensitive {
				w = strings.ToLower(w)
			}
			if strings.Contains(text, w) {
				hits++
			}
		}
		if c.Mode == "all" {
			return hits == len(c.Words)
		}
		return hits > 0
	case config.CondMessageCount:
		return cs.count >= c.MaxMessages
	case config.CondTime:
		return time.Since(cs.start) >= c.Duration
	case config.CondTokenThreshold:
		n := res.Usage.InputTokens + res.Usage.OutputTokens
		switch c.CountType {
		case "prompt":
			n = res.Usage.InputTokens
		case "completion":
			n = res.Usage.OutputTokens
		}
		return n >= int64(c.MaxTokens)
	case config.CondCostLimit:
		return res.Cost >= c.MaxCost
	case config.CondCost:
		return cs.cost >= c.MaxCost
	case config.CondAnd:
		for _, sub := range c.Conditions {
			if !cs.met(sub, res) {
				return false
			}
		}
		return true
	case config.CondOr:
		for _, sub := range c.Conditions {
			if cs.met(sub, res) {
				return true
			}
		}
		return false
	}
	return false
}
