package agui

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/server/internal/servertest"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/internal/queue"
	"github.com/agentpool/agentpool/pool"
)

// lockedLog is a concurrency-safe log buffer.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSlowClientBlocksNoOtherRun: a client that reads nothing holds up no
// other run. Its own run streams more text (500 KB) than its bounded queue
// holds even merged (4 messages, deltas of at most 64 KiB), so once its
// deltas merge it waits, within that bound; meanwhile another client's
// run goes through from start to end. When the slow client reads again it
// gets a complete, valid stream with every word, in far fewer deltas.
func TestSlowClientBlocksNoOtherRun(t *testing.T) {
	servertest.NoLeaks(t)
	const words = 100000
	long := strings.TrimSpace(strings.Repeat("word ", words))
	src := fmt.Sprintf(`
agents:
  talker:
    model: {type: scripted, turns: [%q]}
  quick:
    model: {type: scripted, turns: ["quick answer"]}
`, long)
	reg := hook.New(hook.Options{})
	var (
		mu    sync.Mutex
		ended = map[string]bool{} // agent -> its run ended
	)
	reg.OnSessionEnd.Register(func(_ context.Context, e hook.SessionEnd) error {
		mu.Lock()
		ended[e.Agent] = true
		mu.Unlock()
		return nil
	})
	p := servertest.PoolWith(t, src, pool.Options{Hooks: reg})
	var logs lockedLog
	queues := make(chan *queue.Queue[item], 2)
	s := New(p, Options{QueueSize: 4, Logger: slog.New(slog.NewTextHandler(&logs, nil)), onQueue: func(q *queue.Queue[item]) { queues <- q }})

	post := func(w http.ResponseWriter, agent, thread string) {
		r := httptest.NewRequest("POST", "/agents/"+agent, strings.NewReader(runBody(thread, "Talk.")))
		r.Header.Set("Content-Type", "application/json")
		s.ServeHTTP(w, r)
	}
	slow := &gatedWriter{hdr: http.Header{}, gate: make(chan struct{})}
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		post(slow, "talker", "thread-slow")
	}()
	talkerQueue := <-queues

	// The other client's run, start to end, while the slow one reads
	// nothing.
	fast := httptest.NewRecorder()
	post(fast, "quick", "thread-fast")
	if fast.Code != 200 {
		t.Fatalf("status %d: %s", fast.Code, fast.Body)
	}
	evs := parseSSE(t, fast.Body.Bytes())
	verifyStream(t, evs, "")
	text := func(evs []ev) string {
		var b strings.Builder
		for _, e := range evs {
			if e["type"] == wire.TypeTextMessageContent {
				b.WriteString(e["delta"].(string))
			}
		}
		return b.String()
	}
	if got := text(evs); got != "quick answer" {
		t.Errorf("quick's text %q", got)
	}
	mu.Lock()
	quickEnded := ended["quick"]
	mu.Unlock()
	if !quickEnded {
		t.Error("the quick run's session/end did not fire before its stream ended")
	}
	<-queues // quick's
	// The talker's deltas merge in its full queue while its client reads
	// nothing, until a delta no longer fits a merged one (64 KiB) and the
	// run waits for room: the queue's notice of that wait.
	select {
	case <-talkerQueue.Blocked():
	case <-time.After(time.Minute):
		t.Fatal("the talker's run never waited on its full queue")
	}
	if merged, _ := stats(talkerQueue); merged == 0 {
		t.Error("the talker waited on its queue, but no delta merged first")
	}
	queued := talkerQueue.Len()
	if queued > 4 {
		t.Errorf("the talker's queue holds %d events, bound 4", queued)
	}

	close(slow.gate)
	<-slowDone
	if slow.code != 200 {
		t.Fatalf("status %d: %s", slow.code, slow.buf)
	}
	evs = parseSSE(t, slow.buf)
	verifyStream(t, evs, "")
	if got := text(evs); got != long {
		t.Errorf("talker's text: %d bytes, want %d (a delta was lost)", len(got), len(long))
	}
	deltas := 0
	for _, e := range evs {
		if e["type"] == wire.TypeTextMessageContent {
			deltas++
		}
	}
	mm := regexp.MustCompile(`merged_deltas=(\d+)`).FindAllStringSubmatch(logs.String(), -1)
	merged := 0
	for _, x := range mm {
		n, _ := strconv.Atoi(x[1])
		merged += n
	}
	t.Logf("%d text deltas written to the slow client, %d merged", deltas, merged)
	if merged == 0 || deltas >= words {
		t.Errorf("%d deltas for %d words, %d merged: want merged deltas", deltas, words, merged)
	}
}
