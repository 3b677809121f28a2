package tracing

import (
	"context"
	"iter"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
)

// Model returns m with a chat span around each Stream: from when the
// stream is first ranged over to its last chunk (or the caller's break),
// with the usage and finish reason the chunks carry. The result keeps m's
// price (model.Pricing).
func (o *Observer) Model(m model.Model) model.Model {
	if o == nil {
		return m
	}
	return &tracedModel{inner: m, o: o, provider: providerOf(m)}
}

type tracedModel struct {
	inner    model.Model
	o        *Observer
	provider string
}

func (m *tracedModel) ID() string { return m.inner.ID() }

// Price forwards m's price: 0 when it has none, which model.Cost also
// gives for a model without one.
func (m *tracedModel) Price() (in, out float64) {
	if p, ok := m.inner.(model.Pricing); ok {
		return p.Price()
	}
	return 0, 0
}

func (m *tracedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	if spansOff(ctx) {
		return m.inner.Stream(ctx, req)
	}
	return func(yield func(model.Chunk, error) bool) {
		id := m.inner.ID()
		ctx, span := m.o.tracer.Start(ctx, opChat+" "+id, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(keyOperation.String(opChat), keyRequestModel.String(id), keyProvider.String(m.provider)),
			withConversation(ctx))
		if m.o.capture {
			captureRequest(span, req)
		}
		start := time.Now()
		var usage event.Usage
		var finish, errType string
		var out *outputCapture
		if m.o.capture {
			out = &outputCapture{}
		}
		defer func() {
			span.SetAttributes(keyInputTokens.Int64(usage.InputTokens), keyOutputTokens.Int64(usage.OutputTokens))
			if finish != "" {
				span.SetAttributes(keyFinishReasons.StringSlice([]string{finish}))
			}
			if out != nil {
				out.set(span, finish)
			}
			if errType != "" {
				span.SetAttributes(keyErrorType.String(errType))
			}
			span.End()
			m.o.m.modelCall(ctx, id, m.provider, errType, usage, time.Since(start))
		}()
		for c, err := range m.inner.Stream(ctx, req) {
			if err != nil {
				errType = errorType(ctx, err)
				span.SetStatus(codes.Error, err.Error())
			} else {
				switch c.Kind {
				case model.ChunkUsage:
					usage = c.Usage // the last report is the response's (as the agent reads it)
				case model.ChunkFinish:
					finish = c.FinishReason
				}
				if out != nil {
					out.add(c)
				}
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// errorType names an error for error.type: the context's when it was
// cancelled, else the error's Go type.
func errorType(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "cancelled"
	}
	return typeName(err)
}

// providerOf guesses gen_ai.provider.name from the model's Go package;
// "agentpool" for the offline models and any the package does not know.
func providerOf(m model.Model) string {
	switch pkg := pkgOf(m); {
	case hasSuffix(pkg, "/model/openai"):
		return "openai"
	case hasSuffix(pkg, "/model/anthropic"):
		return "anthropic"
	}
	return "agentpool"
}
