package record

// Helpers of the internal tests.

import (
	"bytes"
	"reflect"
	"sync"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

const (
	lRoot  = "ses_root"
	lChild = "ses_c"
	lGrand = "ses_g"
)

// syncBuffer is a log destination safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func wrapChild(e event.Event) event.Subagent {
	return event.Subagent{SourceName: "worker", SourceType: event.SourceAgent, Depth: 1, ChildSessionID: lChild,
		ParentSessionID: lRoot, ToolCallID: "cal_1", Path: []string{lChild}, Event: e}
}

func equalRecords(a, b session.Session) bool { return reflect.DeepEqual(a, b) }
