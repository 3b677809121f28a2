package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/agentpool/agentpool/internal/queue"
)

const (
	// DefaultQueueSize is how many messages of one session (or of the
	// connection's own replies) may wait for a slow client.
	DefaultQueueSize = 1024
	// maxMergedChunk bounds the text one chunk may carry: longer text is
	// sent in several chunks, and coalescing stops there.
	maxMergedChunk = 64 << 10
)

// outbox is what stands between the connection's producers (the runs'
// converters, the request handlers, approval requests) and the client: one
// bounded queue (internal/queue) per ACP session plus one for the replies
// that belong to no session, a queue.Group drained in turn by a single
// writer goroutine.
//
// A run never writes to the client itself, so a client that reads slowly
// (or not at all) holds up no run as long as its session's queue has room.
// When a queue is full, a message chunk joins an earlier queued chunk of
// the same session and kind, and a spawn's progress update replaces the
// queued one of the same tool call (deltas are coalesced: mergeOut); any
// other message (tool calls, ends, responses: the lifecycle) is never
// dropped: its producer waits until the writer takes that queue's
// contents. Only that session waits; the others go on.
//
// Messages of one queue keep their order (a coalesced chunk only moves
// earlier, past messages of other notification sessions of the same
// queue, never past one of its own session or a response). Queues are
// served round-robin, a whole queue at a time.
type outbox struct {
	w      io.Writer
	size   int
	onFail func(error)
	group  *queue.Group[outItem]
	done   chan struct{}

	mu     sync.Mutex
	queues map[string]*queue.Queue[outItem] // by owner: an ACP session id, or "" for the connection's own replies
}

// outItem is one message waiting to be written. raw is the encoded
// message, except for chunk and progress items, which are encoded when
// written (they may still be coalesced): update is then the chunkUpdate or
// the (progress) toolCallUpdate, as the producer passed it (no copy).
type outItem struct {
	raw    []byte
	sid    string // the session/update's sessionId; "" for responses and requests (barriers)
	update any    // chunkUpdate or toolCallUpdate; nil when raw is set
}

func newOutbox(w io.Writer, size int, onFail func(error)) *outbox {
	if size <= 0 {
		size = DefaultQueueSize
	}
	o := &outbox{
		w: w, size: size, onFail: onFail, group: queue.NewGroup[outItem](),
		queues: map[string]*queue.Queue[outItem]{}, done: make(chan struct{}),
	}
	go o.run()
	return o
}

// queue returns owner's queue.
func (o *outbox) queue(owner string) *queue.Queue[outItem] {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queues[owner]
	if q == nil {
		q = queue.New(queue.Options[outItem]{Capacity: o.size, Merge: mergeOut, Group: o.group})
		o.queues[owner] = q
	}
	return q
}

// send queues a response or a request of owner's queue.
func (o *outbox) send(owner string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return o.push(owner, outItem{raw: append(b, '\n')})
}

// update queues a session/update notification of session sid in owner's
// queue.
func (o *outbox) update(owner, sid string, update any) error {
	switch u := update.(type) {
	case chunkUpdate:
		if u.Content.Type == "text" && u.Content.URI == "" && u.Content.Resource == nil {
			return o.pushChunk(owner, sid, u)
		}
	case toolCallUpdate:
		if isProgress(u) {
			return o.push(owner, outItem{sid: sid, update: update})
		}
	}
	b, err := json.Marshal(outRequest{JSONRPC: "2.0", Method: methodSessionUpdate, Params: sessionNotification{SessionID: sid, Update: update}})
	if err != nil {
		return err
	}
	return o.push(owner, outItem{raw: append(b, '\n'), sid: sid})
}

// pushChunk queues a text chunk in pieces of at most maxMergedChunk bytes,
// cut between characters. A message is sent as it came (a delta, a
// replayed prompt or answer) and may be long: as one line, a message over
// 10 MiB is more than common clients read (they read lines with a bounded
// buffer). A piece's line stays under 400 KiB even with every character
// escaped.
func (o *outbox) pushChunk(owner, sid string, u chunkUpdate) error {
	text := u.Content.Text
	for len(text) > maxMergedChunk {
		cut := maxMergedChunk
		for cut > maxMergedChunk-utf8.UTFMax && !utf8.RuneStart(text[cut]) {
			cut--
		}
		piece := u
		piece.Content.Text = text[:cut]
		if err := o.push(owner, outItem{sid: sid, update: piece}); err != nil {
			return err
		}
		text = text[cut:]
	}
	u.Content.Text = text
	return o.push(owner, outItem{sid: sid, update: u})
}

// isProgress reports whether u only replaces a tool call's content (a
// spawn's progress), so that a later one supersedes it.
func isProgress(u toolCallUpdate) bool {
	return u.SessionUpdate == updateToolCallUpdate && u.Status == "" && u.Title == "" && u.Kind == "" &&
		u.Locations == nil && u.RawInput == nil && u.RawOutput == nil && u.Meta == nil
}

// itemEncoder encodes the items of a batch into buf. The writer goroutine
// keeps one for all its batches, so that a chunk or a progress update is
// encoded in place: no boxing of the update, no copy of the encoding.
type itemEncoder struct {
	buf      bytes.Buffer
	enc      *json.Encoder // writes to buf
	chunk    updateNote[chunkUpdate]
	progress updateNote[toolCallUpdate]
}

// updateNote is a session/update notification with an update of type U.
// It encodes byte for byte as outRequest{JSONRPC: "2.0", Method:
// methodSessionUpdate, Params: sessionNotification{SessionID: sid, Update:
// u}} (the same fields in the same order; ID nil is omitted there).
type updateNote[U any] struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  struct {
		SessionID string `json:"sessionId"`
		Update    U      `json:"update"`
	} `json:"params"`
}

func newItemEncoder() *itemEncoder {
	e := &itemEncoder{}
	e.enc = json.NewEncoder(&e.buf) // escapes HTML, like json.Marshal
	e.chunk.JSONRPC, e.chunk.Method = "2.0", methodSessionUpdate
	e.progress.JSONRPC, e.progress.Method = "2.0", methodSessionUpdate
	return e
}

// add appends it to buf as one line.
func (e *itemEncoder) add(it *outItem) {
	if it.raw != nil {
		e.buf.Write(it.raw)
		return
	}
	// The update is copied into the encoder's own note (no allocation), and
	// cleared afterwards so that the note keeps no reference.
	switch u := it.update.(type) {
	case chunkUpdate:
		e.chunk.Params.SessionID, e.chunk.Params.Update = it.sid, u
		_ = e.enc.Encode(&e.chunk) // strings only: cannot fail (on failure nothing is written)
		e.chunk.Params.SessionID, e.chunk.Params.Update = "", chunkUpdate{}
	case toolCallUpdate:
		e.progress.Params.SessionID, e.progress.Params.Update = it.sid, u
		_ = e.enc.Encode(&e.progress) // strings only, as above
		e.progress.Params.SessionID, e.progress.Params.Update = "", toolCallUpdate{}
	}
}

// reset empties buf, and drops it after a huge batch.
func (e *itemEncoder) reset() {
	if e.buf.Cap() > 4<<20 {
		e.buf = bytes.Buffer{} // do not keep a huge buffer after a huge batch
	}
	e.buf.Reset()
}

// push adds it to owner's queue, coalescing or waiting when the queue is
// full. It never waits once the writer has failed.
func (o *outbox) push(owner string, it outItem) error {
	err := o.queue(owner).Push(it)
	if errors.Is(err, queue.ErrClosed) {
		err = errOutboxClosed
	}
	return err
}

// mergeOut coalesces a chunk into the latest queued item of the same
// session if both are chunks of the same kind, and a progress update into
// the latest one of the same tool call (queue.Options.Merge). Items of
// other sessions are passed; a response or request is a barrier.
func mergeOut(prev *outItem, it outItem) queue.Verdict {
	switch {
	case it.update == nil || prev.sid == "":
		return queue.Stop // a lifecycle message, or a barrier: nothing moves before it
	case prev.sid != it.sid:
		return queue.Skip
	}
	switch u := it.update.(type) {
	case chunkUpdate:
		p, ok := prev.update.(chunkUpdate)
		if !ok || p.SessionUpdate != u.SessionUpdate || len(p.Content.Text)+len(u.Content.Text) > maxMergedChunk {
			return queue.Stop
		}
		p.Content.Text += u.Content.Text
		prev.update = p
		return queue.Merged
	case toolCallUpdate:
		p, ok := prev.update.(toolCallUpdate)
		if !ok || p.ToolCallID != u.ToolCallID {
			return queue.Stop
		}
		p.Content = u.Content
		prev.update = p
		return queue.Merged
	}
	return queue.Stop
}

// run is the writer goroutine.
func (o *outbox) run() {
	defer close(o.done)
	e := newItemEncoder()
	for {
		batch, err := o.group.Take(context.Background())
		if err != nil {
			return // closed and drained, or failed
		}
		e.reset()
		for i := range batch {
			e.add(&batch[i])
		}
		clear(batch) // drop the references to what was written
		if _, err := o.w.Write(e.buf.Bytes()); err != nil {
			o.fail(err)
			return
		}
	}
}

// fail discards everything after a failed write and stops every wait:
// later messages fail with err.
func (o *outbox) fail(err error) {
	o.group.Abort(err)
	if o.onFail != nil {
		o.onFail(err)
	}
}

// close ends the outbox: what is queued is still written, then the writer
// stops; later messages are refused. Call wait to wait for it.
func (o *outbox) close() { o.group.Close() }

// wait returns when the writer has stopped.
func (o *outbox) wait() { <-o.done }

// stats reports how many chunks were coalesced and the longest queue seen.
func (o *outbox) stats() (merged, most int) {
	s := o.group.Stats()
	return s.Merged, s.MaxDepth
}

// errOutboxClosed is returned for messages sent after the writer stopped.
var errOutboxClosed = errors.New("acp: output closed")
