package tracing

import (
	"context"
	"os"
	"strings"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// instrumentationName names the tracer and the meter.
const instrumentationName = "github.com/agentpool/agentpool"

// CaptureContentEnv is the GenAI conventions' opt-in for message contents
// on spans.
const CaptureContentEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Observer makes the spans and metrics of a pool's runs through the
// decorators Node, Model, Tool and Toolset. It is safe for concurrent use.
type Observer struct {
	tracer  trace.Tracer
	m       *instruments // nil: no metrics
	capture bool         // message contents on spans
}

// Options configure an Observer beyond its providers.
type Options struct {
	// CaptureContent puts message contents on spans; nil: the
	// CaptureContentEnv environment variable decides (true or false).
	CaptureContent *bool
}

// New returns the Observer of tp and mp, or nil when both are nil (then
// nothing should be decorated). A nil tp makes no spans, a nil mp no
// metrics.
func New(tp trace.TracerProvider, mp metric.MeterProvider, opts Options) (*Observer, error) {
	if tp == nil && mp == nil {
		return nil, nil
	}
	o := &Observer{}
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	o.tracer = tp.Tracer(instrumentationName)
	if mp != nil {
		m, err := newInstruments(mp.Meter(instrumentationName))
		if err != nil {
			return nil, err
		}
		o.m = m
	}
	if opts.CaptureContent != nil {
		o.capture = *opts.CaptureContent
	} else {
		o.capture = strings.EqualFold(strings.TrimSpace(os.Getenv(CaptureContentEnv)), "true")
	}
	return o, nil
}

// conversationKey carries the root session's id down a traced run, next to
// the span OpenTelemetry itself keeps in the context: request-scoped trace
// data for the decorators (Node, Model, Tool), which sit behind interfaces
// that take only a context. It changes no behaviour of the run.
type conversationKey struct{}

// conversationFrom returns the root session id a root session span put in
// ctx ("" outside a traced run).
func conversationFrom(ctx context.Context) string {
	s, _ := ctx.Value(conversationKey{}).(string)
	return s
}

// InConversation returns ctx in which the chat and execute_tool spans
// name conv (the root session's id) as their gen_ai.conversation.id: for
// model and tool calls run outside the session's own Node.Run (a Temporal
// worker's activities, whose session span is the workflow's); ctx itself
// when conv is "".
func InConversation(ctx context.Context, conv string) context.Context {
	if conv == "" {
		return ctx
	}
	return context.WithValue(ctx, conversationKey{}, conv)
}

// withConversation gives a chat or execute_tool span the conversation id
// of the session it runs in (gen_ai.conversation.id, the root session's
// id), as the GenAI semantic conventions recommend for every span of a
// conversation, so that a trace backend groups a conversation's model
// and tool calls; nothing outside a traced session.
func withConversation(ctx context.Context) trace.SpanStartOption {
	if conv := conversationFrom(ctx); conv != "" {
		return trace.WithAttributes(keyConversationID.String(conv))
	}
	return trace.WithAttributes()
}
