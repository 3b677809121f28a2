package tracing

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// Tool returns t with an execute_tool span around each Call; the tool runs
// with the span in its context, so a session it spawns nests under it. The
// result keeps t's title and locations (tool.Titler, tool.Locator), so the
// events of a call are what they were.
func (o *Observer) Tool(t tool.Tool) tool.Tool {
	if o == nil {
		return t
	}
	return &tracedTool{Tool: t, o: o}
}

// Tools decorates each of ts (a new slice).
func (o *Observer) Tools(ts []tool.Tool) []tool.Tool {
	if o == nil || len(ts) == 0 {
		return ts
	}
	out := make([]tool.Tool, len(ts))
	for i, t := range ts {
		out[i] = o.Tool(t)
	}
	return out
}

type tracedTool struct {
	tool.Tool
	o *Observer
}

// Title forwards t's title ("" without one: the default title applies).
func (t *tracedTool) Title(c tool.Call) string {
	if tt, ok := t.Tool.(tool.Titler); ok {
		return tt.Title(c)
	}
	return ""
}

// Locations forwards t's locations.
func (t *tracedTool) Locations(c tool.Call) []tool.Location { return tool.Locations(t.Tool, c) }

// RunsInline forwards t's spawn.Inline: a delegation stays one that an
// execution engine runs inline (durable runs it in the workflow).
func (t *tracedTool) RunsInline() bool { return spawn.IsInline(t.Tool) }

func (t *tracedTool) Call(ctx context.Context, call tool.Call) (res tool.Result, err error) {
	if spansOff(ctx) {
		return t.Tool.Call(ctx, call)
	}
	ctx, span := t.o.tracer.Start(ctx, opExecuteTool+" "+call.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyOperation.String(opExecuteTool), keyToolName.String(call.Name),
			keyToolCallID.String(call.ID), keyToolType.String("function")), withConversation(ctx))
	if t.o.capture {
		span.SetAttributes(keyToolArgs.String(clip(string(call.Args))))
	}
	start := time.Now()
	errType := ""
	defer func() {
		if r := recover(); r != nil {
			// tool.Run turns it into an error result; the span ends first.
			span.SetStatus(codes.Error, fmt.Sprint("panic: ", r))
			span.SetAttributes(keyErrorType.String("panic"))
			span.End()
			t.o.m.toolCall(ctx, call.Name, "panic", time.Since(start))
			panic(r)
		}
	}()
	res, err = t.Tool.Call(ctx, call)
	switch {
	case err != nil:
		errType = typeName(err)
		span.SetStatus(codes.Error, err.Error())
	case res.IsError:
		errType = "tool_error"
		span.SetStatus(codes.Error, clip(res.Content))
	}
	if errType != "" {
		span.SetAttributes(keyErrorType.String(errType))
	}
	if t.o.capture && err == nil {
		span.SetAttributes(keyToolResult.String(clip(res.Content)))
	}
	span.End()
	t.o.m.toolCall(ctx, call.Name, errType, time.Since(start))
	return res, err
}

// Toolset returns ts whose tools are decorated (Tool) each time it is asked
// for them.
func (o *Observer) Toolset(ts tool.Toolset) tool.Toolset {
	if o == nil {
		return ts
	}
	return tracedToolset{Toolset: ts, o: o}
}

// Toolsets decorates each of ts (a new slice).
func (o *Observer) Toolsets(ts []tool.Toolset) []tool.Toolset {
	if o == nil || len(ts) == 0 {
		return ts
	}
	out := make([]tool.Toolset, len(ts))
	for i, t := range ts {
		out[i] = o.Toolset(t)
	}
	return out
}

type tracedToolset struct {
	tool.Toolset
	o *Observer
}

func (s tracedToolset) Tools(ctx context.Context) ([]tool.Tool, error) {
	ts, err := s.Toolset.Tools(ctx)
	return s.o.Tools(ts), err
}
