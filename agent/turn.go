// One model turn: streaming the response and assembling its message.

package agent

import (
	"bytes"
	"context"
	"fmt"
	"iter"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/spawn"
)

// budgetedTurn runs streamTurn once the budgets over the session admit
// the call (spawn.Invocation.StartModelCall), and counts what it spent on
// them: the one place a model call of an agent starts.
func (r *run) budgetedTurn(ctx context.Context, req *model.Request) (model.Message, string, bool, error) {
	call, err := r.inv.StartModelCall(ctx)
	if err != nil {
		return model.Message{}, "", false, err
	}
	u, cost := r.usage, r.cost
	msg, finish, stored, err := r.streamTurn(ctx, req)
	u = usageSince(r.usage, u)
	call.End(u, r.cost-cost)
	return msg, finish, stored, err
}

// usageSince is what now counts beyond before.
func usageSince(now, before event.Usage) event.Usage {
	return event.Usage{InputTokens: now.InputTokens - before.InputTokens, OutputTokens: now.OutputTokens - before.OutputTokens}
}

// streamTurn runs one model request, emitting part events, and returns the
// assistant message, its finish reason and whether it was stored already
// (by the run's Env, which runs the turn when there is one).
func (r *run) streamTurn(ctx context.Context, req *model.Request) (model.Message, string, bool, error) {
	if r.env != nil {
		t, err := r.env.Turn(ctx, r.inv, r.a.cfg.Name, req)
		r.usage.Add(t.Usage)
		r.cost += t.Cost
		return t.Message, t.Finish, t.Stored, err
	}
	r.turn = turnState{sink: r.sink, open: -1, limit: r.a.cfg.MaxResponseBytes}
	t := &r.turn
	t.consume(r.model.Stream(ctx, req))
	t.closeOpen()
	r.usage.Add(t.usage)
	r.cost += model.Cost(r.model, t.usage)
	if t.err != nil {
		return model.Message{}, "", false, t.err
	}
	msg, finish, err := t.message()
	return msg, finish, false, err
}

// StreamTurn runs one model turn of the agent as a run does, emitting its
// part events to sink, and returns what it produced: what a durable
// engine's model activity runs (spawn.Env.Turn). The error wraps
// ErrResponseTooLarge when the response passed MaxResponseBytes.
func (a *Agent) StreamTurn(ctx context.Context, req *model.Request, sink event.Sink) (spawn.Turn, error) {
	t := turnState{sink: sink, open: -1, limit: a.cfg.MaxResponseBytes}
	t.consume(a.cfg.Model.Stream(ctx, req))
	t.closeOpen()
	out := spawn.Turn{Usage: t.usage, Cost: model.Cost(a.cfg.Model, t.usage)}
	if t.err != nil {
		return out, t.err
	}
	var err error
	out.Message, out.Finish, err = t.message()
	return out, err
}

// turnState accumulates one model response.
type turnState struct {
	sink      event.Sink
	text      textAcc
	thinking  textAcc
	open      int    // index of the open part, -1 when none
	openKind  string // kind of the open part
	nextIndex int    // next part index
	calls     []callState
	usage     event.Usage
	finish    string
	err       error // the stream's error, or ErrResponseTooLarge
	size      int   // bytes of text, thinking and tool arguments so far
	limit     int   // the most size may reach (MaxResponseBytes)
}

type callState struct {
	modelIndex int // the provider's index of the call
	partIndex  int // the event part index
	part       model.Part
	args       textAcc
}

// textAcc accumulates streamed text. Most parts arrive in one chunk, kept
// as it came; a buffer is made only for the second chunk.
type textAcc struct {
	first string
	buf   []byte
	n     int
}

func (a *textAcc) WriteString(s string) {
	switch {
	case s == "":
		return
	case a.n == 0:
		a.first = s
	default:
		if a.buf == nil {
			a.buf = make([]byte, 0, 2*(a.n+len(s)))
			a.buf = append(a.buf, a.first...)
		}
		a.buf = append(a.buf, s...)
	}
	a.n += len(s)
}

func (a *textAcc) Len() int { return a.n }

func (a *textAcc) String() string {
	if a.buf == nil {
		return a.first
	}
	return string(a.buf)
}

// Bytes returns the text as a new slice the caller may keep.
func (a *textAcc) Bytes() []byte {
	if a.buf == nil {
		return []byte(a.first)
	}
	return a.buf
}

// consume takes the chunks of the model's stream; an error ends it.
func (t *turnState) consume(stream iter.Seq2[model.Chunk, error]) {
	defer func() {
		// A stream that goes on yielding after its error breaks the
		// iterator contract, and Go stops it with a panic; the turn ends
		// with the error it had yielded.
		if t.err != nil {
			_ = recover()
		}
	}()
	for c, err := range stream {
		if err != nil {
			t.err = err
			return
		}
		if n := len(c.Text) + len(c.ArgsDelta); n > 0 {
			if t.size += n; t.size > t.limit {
				// Stop reading: the provider's stream is closed, and what
				// came so far was emitted (the parts are closed as usual).
				t.err = fmt.Errorf("%w: larger than %d bytes (text, thinking and tool call arguments; max_response_bytes)", ErrResponseTooLarge, t.limit)
				return
			}
		}
		t.chunk(c)
	}
}

func (t *turnState) closeOpen() {
	if t.open >= 0 {
		t.sink.Emit(event.PartEnd{Index: t.open})
		t.open, t.openKind = -1, ""
	}
}

func (t *turnState) chunk(c model.Chunk) {
	switch c.Kind {
	case model.ChunkText, model.ChunkThinking:
		if c.Text == "" {
			return
		}
		kind, buf := event.PartText, &t.text
		if c.Kind == model.ChunkThinking {
			kind, buf = event.PartThinking, &t.thinking
		}
		if t.openKind != kind {
			t.closeOpen()
			t.open, t.openKind = t.nextIndex, kind
			t.nextIndex++
			t.sink.Emit(event.PartStart{Index: t.open, Part: event.Part{PartKind: kind}})
		}
		buf.WriteString(c.Text)
		t.sink.Emit(event.PartDelta{Index: t.open, Delta: event.Delta{PartDeltaKind: kind, ContentDelta: c.Text}})
	case model.ChunkToolCall:
		k, repeated := -1, false
		for i := range t.calls {
			if t.calls[i].modelIndex == c.Index {
				k = i
				break
			}
			repeated = repeated || (c.ToolCallID != "" && t.calls[i].part.ToolCallID == c.ToolCallID)
		}
		if k < 0 {
			t.closeOpen()
			callID, dupOf := c.ToolCallID, ""
			if callID == "" || repeated {
				// A repeated id gets a fresh one: providers reject a
				// conversation that repeats one, and the run must tell
				// this call's events and result from the first's. The
				// run does not run it (model.Part.DuplicateOf).
				if repeated {
					dupOf = callID
				}
				callID = id.Ascending(id.ToolCall)
			}
			k = len(t.calls)
			t.calls = append(t.calls, callState{modelIndex: c.Index, partIndex: t.nextIndex,
				part: model.Part{Kind: model.PartToolCall, ToolCallID: callID, ToolName: c.ToolName, DuplicateOf: dupOf}})
			t.open, t.openKind = t.nextIndex, event.PartToolCall
			t.nextIndex++
			t.sink.Emit(event.PartStart{Index: t.open, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: callID, ToolName: c.ToolName}})
		} else if c.ToolName != "" && t.calls[k].part.ToolName == "" {
			t.calls[k].part.ToolName = c.ToolName
		}
		if c.ArgsDelta != "" {
			cs := &t.calls[k]
			cs.args.WriteString(c.ArgsDelta)
			t.sink.Emit(event.PartDelta{Index: cs.partIndex, Delta: event.Delta{PartDeltaKind: event.PartToolCall, ArgsDelta: c.ArgsDelta, ToolCallID: cs.part.ToolCallID}})
		}
	case model.ChunkUsage:
		t.usage = c.Usage
	case model.ChunkFinish:
		t.finish = c.FinishReason
	}
}

// message assembles the assistant message: thinking, text, then tool calls.
func (t *turnState) message() (model.Message, string, error) {
	n := len(t.calls)
	if t.thinking.Len() > 0 {
		n++
	}
	if t.text.Len() > 0 {
		n++
	}
	parts := make([]model.Part, 0, n)
	if t.thinking.Len() > 0 {
		parts = append(parts, model.Part{Kind: model.PartThinking, Text: t.thinking.String()})
	}
	if t.text.Len() > 0 {
		parts = append(parts, model.Part{Kind: model.PartText, Text: t.text.String()})
	}
	for k := range t.calls {
		args := t.calls[k].args.Bytes()
		if len(bytes.TrimSpace(args)) == 0 {
			args = []byte("{}")
		}
		p := t.calls[k].part
		p.Args = args
		parts = append(parts, p)
	}
	finish := t.finish
	if finish == "" {
		finish = model.FinishStop
		if len(t.calls) > 0 {
			finish = model.FinishToolCalls
		}
	}
	return model.Message{Role: model.RoleAssistant, Parts: parts}, finish, nil
}
