package a2a

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/queue"
)

// item is what the run's sink queues for the writer: a text delta of the
// root (text; part starts a new text part), or an event of a delegation
// or a tool call (ev).
type item struct {
	ev   event.Event
	text string
	part bool
}

// stream is a run's sink (event.Sink): the pool's recorder calls Emit
// under its lock, so Emit only queues (a bounded queue, text merged when
// full); the writer goroutine turns items into A2A events and writes them
// to the SDK's queue, which may wait for slow subscribers.
type stream struct {
	sid  string // the root session
	rc   *a2asrv.RequestContext
	q    *queue.Queue[item]
	done chan struct{}
	// Writer's own, read by close after done: the text of the root's
	// latest text part (its last answer, when the run ends).
	last strings.Builder
}

func newStream(ctx context.Context, sid string, rc *a2asrv.RequestContext, out eventqueue.Queue, size int) *stream {
	st := &stream{sid: sid, rc: rc, done: make(chan struct{}), q: queue.New(queue.Options[item]{
		Capacity: size,
		Merge: func(prev *item, next item) queue.Verdict {
			if next.ev != nil || next.part || prev.ev != nil || len(prev.text)+len(next.text) > maxChunk {
				return queue.Stop
			}
			prev.text += next.text
			return queue.Merged
		},
	})}
	go st.write(ctx, out)
	return st
}

// Emit implements event.Sink.
func (st *stream) Emit(e event.Event) {
	var it item
	switch v := e.(type) {
	case event.Subagent:
		switch v.Event.(type) {
		case event.SpawnSessionStart, event.SpawnSessionEnd:
			it.ev = v.Event
		default:
			return
		}
	case event.SpawnSessionStart, event.SpawnSessionEnd, event.ToolCallStart:
		it.ev = v
	case event.PartStart:
		if v.Part.PartKind != event.PartText {
			return
		}
		it.part, it.text = true, v.Part.Content
	case event.PartDelta:
		if v.Delta.PartDeltaKind != event.PartText || v.Delta.ContentDelta == "" {
			return
		}
		it.text = v.Delta.ContentDelta
	default:
		return
	}
	_ = st.q.Push(it) // fails only once the writer gave up (its queue closed)
}

// close ends the stream once the run returned, waits for the writer and
// returns the root's last text part.
func (st *stream) close() string {
	st.q.Close()
	<-st.done
	return st.last.String()
}

// write turns items into A2A events until the queue is closed and empty.
// A write that fails (the task ended: tasks/cancel) stops the writing;
// the run goes on to its end, its items discarded.
func (st *stream) write(ctx context.Context, out eventqueue.Queue) {
	defer close(st.done)
	var artifact a2a.ArtifactID
	for {
		items, err := st.q.Take(ctx)
		if err != nil {
			st.q.Abort(err)
			return
		}
		for _, it := range items {
			if it.part {
				artifact = ""
				st.last.Reset()
			}
			var evs iter.Seq[a2a.Event]
			switch v := it.ev.(type) {
			case nil:
				if it.text == "" {
					continue
				}
				if st.last.Len() < 1<<20 {
					st.last.WriteString(it.text)
				}
				evs = artifactChunks(st.rc, artifact, "response", it.text, nil)
			case event.SpawnSessionStart:
				evs = one(st.status(fmt.Sprintf("%s [%s] started: %s", v.SourceName, v.SourceType, v.Description), map[string]any{
					"event": string(event.KindSpawnSessionStart), "child_session_id": v.ChildSessionID, "parent_session_id": v.ParentSessionID,
					"source_name": v.SourceName, "source_type": string(v.SourceType), "depth": v.Depth, "mechanism": string(v.SpawnMechanism)}))
			case event.SpawnSessionEnd:
				meta := map[string]any{"event": string(event.KindSpawnSessionEnd), "child_session_id": v.ChildSessionID, "parent_session_id": v.ParentSessionID,
					"source_name": v.SourceName, "source_type": string(v.SourceType), "depth": v.Depth, "stop_reason": string(v.StopReason)}
				text := fmt.Sprintf("%s [%s] %s", v.SourceName, v.SourceType, v.StopReason)
				if v.Error != "" {
					text += ": " + v.Error
				}
				evs = func(yield func(a2a.Event) bool) {
					if !yield(st.status(text, meta)) || v.LastAssistantMessage == "" {
						return
					}
					for ev := range artifactChunks(st.rc, "", v.SourceName, v.LastAssistantMessage, meta) {
						if !yield(ev) {
							return
						}
					}
				}
			case event.ToolCallStart:
				evs = one(st.status("calling "+v.ToolName, map[string]any{"event": string(event.KindToolCallStart), "tool_call_id": v.ToolCallID, "tool_name": v.ToolName}))
			}
			for ev := range evs {
				if ae, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok && it.ev == nil {
					artifact = ae.Artifact.ID
				}
				if err := out.Write(ctx, ev); err != nil {
					st.q.Abort(err)
					return
				}
			}
		}
	}
}

// status is a working status update with text and agentpool's metadata.
func (st *stream) status(text string, meta map[string]any) *a2a.TaskStatusUpdateEvent {
	if len(text) > maxChunk {
		text = text[:maxChunk]
	}
	ev := a2a.NewStatusUpdateEvent(st.rc, a2a.TaskStateWorking, a2a.NewMessageForTask(a2a.MessageRoleAgent, st.rc, a2a.TextPart{Text: text}))
	meta["session_id"] = st.sid
	ev.Metadata = map[string]any{MetaKey: meta}
	return ev
}

func one(ev a2a.Event) iter.Seq[a2a.Event] {
	return func(yield func(a2a.Event) bool) { yield(ev) }
}

// artifactChunks are the events that carry text in artifact id (a new
// artifact named name when id is ""), at most maxChunk bytes each, cut at
// character boundaries.
func artifactChunks(rc a2a.TaskInfoProvider, id a2a.ArtifactID, name, text string, meta map[string]any) iter.Seq[a2a.Event] {
	return func(yield func(a2a.Event) bool) {
		for len(text) > 0 {
			n := min(len(text), maxChunk)
			for n < len(text) && n > 0 && !utf8Start(text[n]) {
				n--
			}
			chunk := text[:n]
			text = text[n:]
			var ev *a2a.TaskArtifactUpdateEvent
			if id == "" {
				ev = a2a.NewArtifactEvent(rc, a2a.TextPart{Text: chunk})
				ev.Artifact.Name = name
				if meta != nil {
					ev.Artifact.Metadata = map[string]any{MetaKey: meta}
				}
				id = ev.Artifact.ID
			} else {
				ev = a2a.NewArtifactUpdateEvent(rc, id, a2a.TextPart{Text: chunk})
			}
			if !yield(ev) {
				return
			}
		}
	}
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
