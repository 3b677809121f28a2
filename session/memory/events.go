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
//   - Records and text are kept in blocks that are never copied nor
//     grown: a small first block, for the many sessions that log a few
//     events, then blocks of a fixed larger size. A log grown by append
//     copies itself at every growth and allocates two to three times what
//     it keeps.
type eventLog struct {
	recs [][]record // firstEvents records, then logBlock each; the last filling
	n    int
	// text holds the text of the compact deltas, each within one block:
	// firstText bytes, then textBlock each, the last filling. A delta's
	// offset counts from the first block's start, as if the blocks were
	// one after the other (textAt).
	text [][]byte
}

const (
	// firstEvents is the capacity of a session's first block of records:
	// a session that logs anything logs a run (start, a part, its end,
	// the end of the stream).
	firstEvents = 8
	// logBlock is the number of records of every later block: 3 KB.
	logBlock = 64
	// firstText is the size of a session's first text block.
	firstText = 256
	// textBlock is the size of every later text block, and the longest
	// text a compact delta has: a model's delta is a few tokens.
	textBlock = 2048
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
func (l *eventLog) at(i int) *record {
	if i < firstEvents {
		return &l.recs[0][i]
	}
	i -= firstEvents
	return &l.recs[1+i/logBlock][i%logBlock]
}

// add appends ev, the global sequence number gseq, at unix nanoseconds
// nano.
func (l *eventLog) add(ev event.Event, gseq, nano int64) {
	r := record{ev: ev, gseq: gseq, nano: nano}
	if d, ok := ev.(event.PartDelta); ok {
		l.compact(&r, d)
	}
	switch {
	case len(l.recs) == 0:
		l.recs = [][]record{make([]record, 0, firstEvents)}
	case len(l.recs[len(l.recs)-1]) == cap(l.recs[len(l.recs)-1]):
		l.recs = append(l.recs, make([]record, 0, logBlock))
	}
	last := &l.recs[len(l.recs)-1]
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
		l.text = [][]byte{make([]byte, 0, firstText)}
	}
	b := len(l.text) - 1
	if len(l.text[b])+len(s) > cap(l.text[b]) {
		l.text = append(l.text, make([]byte, 0, textBlock))
		b++
	}
	r.off = uint32(textStart(b) + len(l.text[b]))
	r.n = uint32(len(s))
	r.index, r.kind, r.ev = int32(d.Index), k, nil
	l.text[b] = append(l.text[b], s...)
}

// textStart is the offset of text block k (see eventLog.text).
func textStart(k int) int {
	if k == 0 {
		return 0
	}
	return firstText + (k-1)*textBlock
}

// textAt returns the text of the compact delta at offset off, n long.
func (l *eventLog) textAt(off, n uint32) string {
	k := 0
	if off >= firstText {
		k = 1 + int(off-firstText)/textBlock
	}
	i := int(off) - textStart(k)
	return string(l.text[k][i : i+int(n)])
}

// event returns the event r keeps.
func (l *eventLog) event(r *record) event.Event {
	if r.ev != nil {
		return r.ev
	}
	return event.PartDelta{Index: int(r.index), Delta: event.Delta{
		PartDeltaKind: deltaKinds[r.kind], ContentDelta: l.textAt(r.off, r.n),
	}}
}
