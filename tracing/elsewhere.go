package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// Helpers for runs whose spans another layer starts: a session run as a
// Temporal workflow (package durable). Workflow code is replayed (after a
// worker restart, a cache eviction), so a span made there would be made
// again; the Temporal SDK's interceptor makes the workflow's span and
// carries it into the activities, and the session's span is that one,
// named and attributed by SessionSpan.

// noSpansKey marks a context under which the decorators make no spans. A
// context mark, like OpenTelemetry's own span, because the decorators sit
// behind spawn.Node, model.Model and tool.Tool, which take only a
// context; it changes what is traced, never what the run does.
type noSpansKey struct{}

// WithoutSpans returns ctx under which the decorators (Node, Model, Tool)
// make no spans and record no metrics: for code that runs again on
// replay, whose spans would otherwise be made twice.
func WithoutSpans(ctx context.Context) context.Context {
	return context.WithValue(ctx, noSpansKey{}, true)
}

// spansOff reports whether ctx came from WithoutSpans.
func spansOff(ctx context.Context) bool {
	off, _ := ctx.Value(noSpansKey{}).(bool)
	return off
}

// SessionSpan makes span, one that another layer started for the run of
// a session (the Temporal interceptor's RunWorkflow span), the session's
// span as Node makes it: named invoke_agent {agent} (invoke_workflow
// {team}), with the same attributes and the run's end. conv is the root
// session's id, mechanism how the session was spawned ("" when not known
// or a root: the attribute is left out).
// Call it once, when the run ended; a nil span or node does nothing.
func SessionSpan(span trace.Span, n spawn.Node, sess session.Session, conv, mechanism string, res spawn.Result) {
	if span == nil || n == nil || !span.IsRecording() {
		return
	}
	op := sessionOp(n)
	span.SetName(op + " " + n.Name())
	span.SetAttributes(sessionAttrs(op, n, sess, conv, mechanism)...)
	endSession(span, res.StopReason, res)
}

// sessionOp is the operation of n's session span.
func sessionOp(n spawn.Node) string {
	if n.SourceType() != event.SourceAgent {
		return opInvokeWorkflow
	}
	return opInvokeAgent
}

// SessionStarted records a session's start in the metrics, for a session
// run elsewhere (on a Temporal worker), as Node does for one it runs. A
// nil Observer records nothing.
func (o *Observer) SessionStarted(ctx context.Context, agent string, depth int) {
	if o == nil {
		return
	}
	o.m.sessionStarted(ctx, agent, depth)
}

// SessionEnded records a session's end in the metrics (see SessionStarted).
func (o *Observer) SessionEnded(ctx context.Context, agent string, stop event.StopReason, cost float64, d time.Duration) {
	if o == nil {
		return
	}
	o.m.sessionEnded(ctx, agent, stop, cost, d)
}
