package durable

import (
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/agentpool/agentpool/internal/otelprop"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tracing"
)

// TracingInterceptor is the Temporal SDK's OpenTelemetry interceptor over
// tp, with tracing's propagator (W3C trace context and baggage), or nil
// when tp is nil (tracing off: nothing is installed). Set on the client
// that submits roots and on the client workers are made from (a worker
// takes its client's interceptors), it carries the submitting side's span
// into the workflows' and activities' headers, so that one run over any
// number of workers is one trace:
//
//	StartWorkflow (the submitting side)
//	└ invoke_agent {root}            (the root's RunWorkflow span)
//	  ├ StartActivity / RunActivity agentpool.Turn
//	  │  └ chat {model}
//	  ├ StartActivity / RunActivity agentpool.Tool
//	  │  └ execute_tool {tool}
//	  └ StartChildWorkflow agentpool.Session
//	     └ invoke_agent {child}      (the child's RunWorkflow span)
//	        └ ...
func TracingInterceptor(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	if tp == nil {
		return nil, nil
	}
	return temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:            tp.Tracer("go.temporal.io/sdk"),
		TextMapPropagator: otelprop.Propagator(),
	})
}

// nameSessionSpan makes the workflow's span (the interceptor's
// RunWorkflow span, when there is one) the session's span. Why that span
// and not one of the session's own: workflow code runs again on replay,
// and a span made there would be made again; the interceptor's span is
// the one the activities and child workflows are already parented on.
// It is named at the end of the run (never on replay), so the span of a
// worker that lost the workflow halfway (evicted, killed) is not taken
// for the session's.
func nameSessionSpan(wctx workflow.Context, node spawn.Node, in SessionInput, res spawn.Result) {
	if workflow.IsReplaying(wctx) {
		return
	}
	span, ok := temporalotel.SpanFromWorkflowContext(wctx)
	if !ok {
		return
	}
	conv := in.Conversation
	if in.Session.ParentID == "" {
		conv = in.Session.ID
	}
	tracing.SessionSpan(span, node, in.Session, conv, string(in.Mechanism), res)
}
