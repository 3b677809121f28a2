package tracing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// Node returns n with a session span around each run: invoke_agent for an
// agent, invoke_workflow for a team. The span is made with the context
// Run is given (a child's: its spawning tool call's or its team's), and
// the node runs with the span in its context. n's name, description,
// source type and model are its own.
func (o *Observer) Node(n spawn.Node) spawn.Node {
	if o == nil {
		return n
	}
	return &tracedNode{Node: n, o: o}
}

type tracedNode struct {
	spawn.Node
	o *Observer
}

func (n *tracedNode) Run(ctx context.Context, inv *spawn.Invocation) (res spawn.Result) {
	if spansOff(ctx) {
		return n.Node.Run(ctx, inv)
	}
	op := sessionOp(n)
	sess := inv.Session
	conv := conversationFrom(ctx)
	if sess.ParentID == "" || conv == "" {
		conv = sess.ID
		ctx = context.WithValue(ctx, conversationKey{}, conv)
	}
	attrs := sessionAttrs(op, n, sess, conv, string(inv.Mechanism))
	ctx, span := n.o.tracer.Start(ctx, op+" "+n.Name(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	n.o.m.sessionStarted(ctx, n.Name(), sess.Depth)
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			// spawn recovers it (stop reason error); the span ends first.
			span.SetStatus(codes.Error, fmt.Sprint("panic: ", r))
			span.SetAttributes(keyErrorType.String("panic"), keyStopReason.String(string(event.StopError)))
			span.End()
			n.o.m.sessionEnded(ctx, n.Name(), event.StopError, res.Cost, time.Since(start))
			panic(r)
		}
	}()
	res = n.Node.Run(ctx, inv)
	stop := stopReason(ctx, res)
	endSession(span, stop, res)
	span.End()
	n.o.m.sessionEnded(ctx, n.Name(), stop, res.Cost, time.Since(start))
	return res
}

// sessionAttrs are the attributes of a session span at its start (conv
// and mechanism left out when "").
func sessionAttrs(op string, n spawn.Node, sess session.Session, conv, mechanism string) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs,
		keyOperation.String(op), keyAgentName.String(n.Name()), keyAgentID.String(sess.ID), keyDepth.Int(sess.Depth),
	)
	if conv != "" {
		attrs = append(attrs, keyConversationID.String(conv))
	}
	if d := n.Description(); d != "" {
		attrs = append(attrs, keyAgentDesc.String(d))
	}
	if m := n.ModelID(); m != "" {
		attrs = append(attrs, keyRequestModel.String(m))
	}
	if sess.ParentID != "" {
		attrs = append(attrs, keyParentID.String(sess.ParentID))
	}
	if mechanism != "" {
		attrs = append(attrs, keyMechanism.String(mechanism))
	}
	return attrs
}

// endSession sets the end of a session's run on its span (not ended).
func endSession(span trace.Span, stop event.StopReason, res spawn.Result) {
	if stop == "" {
		stop = event.StopCompleted
	}
	span.SetAttributes(keyStopReason.String(string(stop)), keyCost.Float64(res.Cost),
		keyInputTokens.Int64(res.Usage.InputTokens), keyOutputTokens.Int64(res.Usage.OutputTokens))
	if stop == event.StopError || stop == event.StopAborted || stop == event.StopBudget {
		msg := string(stop)
		if res.Err != nil {
			msg = res.Err.Error()
		}
		span.SetStatus(codes.Error, msg)
		span.SetAttributes(keyErrorType.String(string(stop)))
	}
}

// stopReason is the stop reason spawn settles a result with: the node's,
// completed (or error) when it gave none, aborted when it did not
// complete under a cancelled context (error after a spawn timeout).
func stopReason(ctx context.Context, res spawn.Result) event.StopReason {
	stop := res.StopReason
	if stop == "" {
		stop = event.StopCompleted
		if res.Err != nil {
			stop = event.StopError
		}
	}
	if cause := context.Cause(ctx); cause != nil && stop != event.StopCompleted {
		if errors.Is(cause, spawn.ErrTimeout) {
			return event.StopError
		}
		return event.StopAborted
	}
	return stop
}
