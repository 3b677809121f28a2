package agui

import "github.com/agentpool/agentpool/internal/queue"

const (
	// DefaultQueueSize is the number of events that may wait between a run
	// and a slow client.
	DefaultQueueSize = 1024
	// maxMergedDelta bounds the text one merged delta may carry.
	maxMergedDelta = 64 << 10
)

// newQueue returns the bounded queue (internal/queue) between a run (one
// producer: the pool's recorder serializes the sink) and the HTTP writer
// (one consumer).
//
// A delta whose message or tool call has the last queued event (a delta
// the writer has not taken yet: it writes at most once per
// FlushInterval) joins it, full or not (so does an append to the same
// list of a subagent's activity: one op with the joined text): the client concatenates deltas, so
// its text is the same in fewer events, each of which costs encoding on
// the server and parsing on the client. When the queue is full, a delta
// joins an earlier queued delta of the same message or tool call if no
// other event of the same session sits between them (mergeDelta); a
// droppable event is dropped; any other event blocks the producer until
// the consumer takes the queue's contents (or goes away: Abort).
func newQueue(size int) *queue.Queue[item] {
	if size <= 0 {
		size = DefaultQueueSize
	}
	return queue.New(queue.Options[item]{
		Capacity: size,
		Merge:    mergeDelta,
		// The writer batches (FlushInterval): the deltas a model streams
		// meanwhile are joined as they come.
		MergeTail: true,
		// A run with many children interleaves their events: the delta
		// a new one may join can lie far back.
		Stream: func(it item) string { return it.owner },
		Drop:   func(it item) bool { return it.class == classDroppable },
	})
}

// mergeDelta appends it's delta to the latest queued delta of the same
// stream, looking back past events of other sessions only
// (queue.Options.Merge).
func mergeDelta(prev *item, it item) queue.Verdict {
	switch {
	case it.class != classDelta:
		return queue.Stop
	case prev.owner != it.owner:
		return queue.Skip
	}
	p, e := prev.ev, it.ev
	if prev.class != classDelta || p != e && (p.Type != e.Type || p.MessageID != e.MessageID || p.ToolCallID != e.ToolCallID ||
		p.SubagentRunID != e.SubagentRunID || p.AppendPath != e.AppendPath) || prev.textLen()+len(it.delta) > maxMergedDelta {
		return queue.Stop
	}
	prev.join(it.delta) // the template (ev) is shared: never changed
	return queue.Merged
}
