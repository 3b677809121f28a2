package memory

import (
	"math"

	"github.com/agentpool/agentpool/event"
)

// eventLog is a session's events, under its entry's lock.
//
// What a running process keeps longest is its runs' events, and most of
// them are a stream's deltas; the store is built so that they cost the
// collector little and allocate little:
//
//   - A text or thinking delta with content only is kept compact: its
//     index and kind in its record (no pointer) and its text in the log's
//     text blocks (bytes, which the collector does not scan), instead of
//     the boxed PartDelta and its string, two objects full of pointers
//     that every collection traces. at and event give back an equal
//     PartDelta.
//   - Records and text are kept in blocks that never move: the first
//     grows, as append would, to a block's size, then each block is
//     allocated full size once. A log grown by append copies itself at
//     every growth and allocates two to three times what it keeps.
type eventLog struct {
	recs [][]record // each of logBlock records, the last one filling
	n    int
	// text holds the text of the compact deltas, each within one block
	// of textBlock bytes (the last one filling): a delta's text is
	// text[off/textBlock][off%textBlock:][:n].
	text [][]byte
}

const (
	// logBlock is the number of records of a block: 3 KB.
	logBlock = 64
	// firstEvents is the capacity of a session's log at its first event:
	// a session that logs anything logs a run (start, a part, its end,
	// the end of the stream).
	firstEvents = 8
	// textBlock is the size of a text block, and the longest text a
	// compact delta has: a model's delta is a few tokens.
	textBlock = 2048
	// firstText is the capacity of the first text block.
	firstText = 256
)

// record is one stored event: session.Record without the session id and
// per-session seq (both implied by where it is kept) and with the time as
// unix nanoseconds. For a compact delta (eventLog), ev is nil.
type record struct {
	ev   event.Event
	gseq int64
	nano int64

	// A compact delta: its text's offset (see eventLog.text) and length,
	// its part's index and its kind.
	off, n uint32
	index  int32
	kind   deltaKind
}

// deltaKind is the PartDeltaKind of a compact delta.
type deltaKind uint8

const (
	deltaText deltaKind = iota
	deltaThinking
)

// deltaKinds are the PartDeltaKind strings of the deltaKind values.
var deltaKinds = [...]string{deltaText: event.PartText, deltaThinking: event.PartThinking}

func (l *eventLog) len() int { return l.n }

// at returns the i-th record (from 0); i < l.len().
func (l *eventLog) at(i int) *record { return &l.recs[i/logBlock][i%logBlock] }

// add appends ev, the global sequence number gseq, at unix nanoseconds
// nano.
func (l *eventLog) add(ev event.Event, gseq, nano int64) {
	r := record{ev: ev, gseq: gseq, nano: nano}
	if d, ok := ev.(event.PartDelta); ok {
		l.compact(&r, d)
	}
	if len(l.recs) == 0 {
		l.recs = [][]record{make([]record, 0, firstEvents)}
	}
	last := &l.recs[len(l.recs)-1]
	switch {
	case len(*last) < cap(*last):
	case cap(*last) < logBlock: // the first block, growing
		*last = append(make([]record, 0, min(2*cap(*last), logBlock)), *last...)
	default:
		l.recs = append(l.recs, make([]record, 0, logBlock))
		last = &l.recs[len(l.recs)-1]
	}
	*last = append(*last, r)
	l.n++
}

// compact makes r, the record of d, a compact delta when d is one (see
// eventLog), with its text in l's blocks.
func (l *eventLog) compact(r *record, d event.PartDelta) {
	var k deltaKind
	switch d.Delta.PartDeltaKind {
	case event.PartText:
		k = deltaText
	case event.PartThinking:
		k = deltaThinking
	default:
		return
	}
	s := d.Delta.ContentDelta
	if d.Delta.ArgsDelta != "" || d.Delta.ToolCallID != "" || len(s) > textBlock ||
		d.Index < math.MinInt32 || d.Index > math.MaxInt32 ||
		uint64(len(l.text)+1)*textBlock > math.MaxUint32 {
		return
	}
	if len(l.text) == 0 {
		l.text = [][]byte{make([]byte, 0, max(firstText, len(s)))}
	}
	last := &l.text[len(l.text)-1]
	switch {
	case len(*last)+len(s) <= cap(*last):
	case len(*last)+len(s) <= textBlock: // the first block, growing
		*last = append(make([]byte, 0, min(max(2*cap(*last), len(*last)+len(s)), textBlock)), *last...)
	default:
		l.text = append(l.text, make([]byte, 0, textBlock))
		last = &l.text[len(l.text)-1]
	}
	r.off = uint32((len(l.text)-1)*textBlock + len(*last))
	r.n = uint32(len(s))
	r.index, r.kind, r.ev = int32(d.Index), k, nil
	*last = append(*last, s...)
}

// event returns the event r keeps.
func (l *eventLog) event(r *record) event.Event {
	if r.ev != nil {
		return r.ev
	}
	b := l.text[r.off/textBlock]
	i := r.off % textBlock
	return event.PartDelta{Index: int(r.index), Delta: event.Delta{
		PartDeltaKind: deltaKinds[r.kind], ContentDelta: string(b[i : i+r.n]),
	}}
}
