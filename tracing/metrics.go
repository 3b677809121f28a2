package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentpool/agentpool/event"
)

// instruments are the metrics: the GenAI conventions' client operation
// duration and token usage for model calls, and agentpool's own for
// sessions, cost and tool calls. A nil *instruments records nothing.
type instruments struct {
	started  metric.Int64Counter
	ended    metric.Int64Counter
	sessionD metric.Float64Histogram
	cost     metric.Float64Counter
	opDur    metric.Float64Histogram
	tokens   metric.Int64Histogram
	toolDur  metric.Float64Histogram
}

// The buckets of the GenAI conventions for operation durations (seconds)
// and token counts.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

func newInstruments(m metric.Meter) (*instruments, error) {
	var in instruments
	var errs [7]error
	in.started, errs[0] = m.Int64Counter("agentpool.sessions.started", metric.WithUnit("{session}"),
		metric.WithDescription("Sessions started (root and child)."))
	in.ended, errs[1] = m.Int64Counter("agentpool.sessions.ended", metric.WithUnit("{session}"),
		metric.WithDescription("Sessions ended, by stop reason."))
	in.sessionD, errs[2] = m.Float64Histogram("agentpool.session.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a session's run."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	in.cost, errs[3] = m.Float64Counter("agentpool.cost", metric.WithUnit("USD"),
		metric.WithDescription("Cost of the sessions' own model calls, in US dollars."))
	in.opDur, errs[4] = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	in.tokens, errs[5] = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	in.toolDur, errs[6] = m.Float64Histogram("agentpool.tool.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of a tool call."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return &in, nil
}

func (in *instruments) sessionStarted(ctx context.Context, agent string, depth int) {
	if in == nil {
		return
	}
	in.started.Add(ctx, 1, metric.WithAttributes(keyAgentName.String(agent), keyDepth.Int(depth)))
}

func (in *instruments) sessionEnded(ctx context.Context, agent string, stop event.StopReason, cost float64, d time.Duration) {
	if in == nil {
		return
	}
	set := metric.WithAttributeSet(attribute.NewSet(keyAgentName.String(agent), keyStopReason.String(string(stop))))
	in.ended.Add(ctx, 1, set)
	in.sessionD.Record(ctx, d.Seconds(), set)
	if cost > 0 {
		in.cost.Add(ctx, cost, metric.WithAttributes(keyAgentName.String(agent)))
	}
}

func (in *instruments) modelCall(ctx context.Context, modelID, provider, errType string, u event.Usage, d time.Duration) {
	if in == nil {
		return
	}
	attrs := []attribute.KeyValue{keyOperation.String(opChat), keyRequestModel.String(modelID), keyProvider.String(provider)}
	if errType != "" {
		attrs = append(attrs, keyErrorType.String(errType))
	}
	in.opDur.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
	if errType != "" {
		return
	}
	in.tokens.Record(ctx, u.InputTokens, metric.WithAttributes(append(attrs, keyTokenType.String("input"))...))
	in.tokens.Record(ctx, u.OutputTokens, metric.WithAttributes(append(attrs, keyTokenType.String("output"))...))
}

func (in *instruments) toolCall(ctx context.Context, name, errType string, d time.Duration) {
	if in == nil {
		return
	}
	attrs := []attribute.KeyValue{keyOperation.String(opExecuteTool), keyToolName.String(name)}
	if errType != "" {
		attrs = append(attrs, keyErrorType.String(errType))
	}
	in.toolDur.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
}
