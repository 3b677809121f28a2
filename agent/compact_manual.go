// A compaction asked for (OpenCode's summarize, pool.RunRequest.Compact,
// which the pool sets as spawn.Invocation.Compact):
// the run summarises and answers with the summary, without a model turn.

package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// manualMaxBytes bounds the transcript a manual compaction of a model with
// no known context window sends: 1 MiB, about 250,000 tokens.
const manualMaxBytes = 1 << 20

// compactOnly is a run that compacts: everything before the latest turn
// (from the last prompt a user typed) is summarised, or, with a known
// window, before as much as an automatic compaction keeps; the
// compaction event is recorded and the summary is the run's answer. A
// conversation with nothing to summarise answers so.
func (r *run) compactOnly(ctx context.Context, instructions string) spawn.Result {
	if r.env != nil {
		return r.fail(ctx, fmt.Errorf("compaction is not done under a durable execution engine"), event.StopError, "compaction_error")
	}
	window, limit := r.a.window(r)
	budget := limit / 2
	if window <= 0 {
		limit, budget = manualMaxBytes/bytesPerToken, 0
	}
	done, err := r.compactNow(ctx, CompactManual, instructions, limit, budget, true)
	if err != nil {
		return r.compactFailed(ctx, err).res
	}
	text := fmt.Sprintf("Nothing to compact: the %d messages sent after the last summary are the latest turn.", len(r.snapshot()))
	if done {
		text = strings.TrimPrefix(r.compact.summary.Text(), session.SummaryPrefix)
	}
	if r.storeErr != nil {
		return r.fail(ctx, fmt.Errorf("%w: %w", ErrStore, r.storeErr), event.StopError, "store_error")
	}
	// The answer as a text part, as a model turn's: front ends show it.
	r.sink.Emit(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}})
	r.sink.Emit(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: text}})
	r.sink.Emit(event.PartEnd{Index: 0})
	r.sink.Emit(event.StreamComplete{Message: event.Message{
		Role: "assistant", Content: text, Usage: r.usage, Cost: r.cost, Model: r.model.ID(), FinishReason: "stop",
	}})
	return spawn.Result{Output: text, StopReason: event.StopCompleted}
}
