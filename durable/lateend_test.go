package durable

import (
	"context"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// usageModel answers the prompt, then what the last message says, each
// turn with 10 input and 2 output tokens.
type usageModel struct {
	mu    sync.Mutex
	asked []string
}

func (m *usageModel) ID() string { return "boss" }

func (m *usageModel) Stream(_ context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	last := req.Messages[len(req.Messages)-1].Text()
	m.mu.Lock()
	m.asked = append(m.asked, last)
	m.mu.Unlock()
	text := "first answer"
	if len(req.Messages) > 1 {
		text = "then: " + last
	}
	return func(yield func(model.Chunk, error) bool) {
		_ = yield(model.Chunk{Kind: model.ChunkText, Text: text}, nil) &&
			yield(model.Chunk{Kind: model.ChunkUsage, Usage: event.Usage{InputTokens: 10, OutputTokens: 2}}, nil) &&
			yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishStop}, nil)
	}
}

// holdEnd is a store whose first write of a session's end (an update
// that takes the session out of running) waits, once it is reached, until
// release is closed.
type holdEnd struct {
	session.Store
	once             sync.Once
	reached, release chan struct{}
}

func (h *holdEnd) UpdateSession(ctx context.Context, id string, fn func(*session.Session)) error {
	if s, err := h.Store.GetSession(ctx, id); err == nil {
		fn(&s)
		if s.Status != session.StatusRunning {
			h.once.Do(func() {
				close(h.reached)
				<-h.release
			})
		}
	}
	return h.Store.UpdateSession(ctx, id, fn)
}

// A message that comes while the workflow task that ends the session
// runs (its End, a local activity, is writing) is read, not lost: the
// server refuses to complete a workflow during whose task a signal came,
// and the task done again has the signal with the turn's end, before the
// session decides to end. The session answers it in a second turn, and
// the store ends the session once, with that answer.
func TestMessageDuringTheEndingTaskIsRead(t *testing.T) {
	t.Parallel()
	addr := startDevServer(t)
	st := openTestDB(t, testDB(t))
	boss := &usageModel{}
	p, err := pool.Build(pool.Config{Agents: []pool.AgentSpec{{Name: "boss", Model: boss}}, Default: "boss"}, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c := dialTest(t, addr)
	const queue = "agentpool-late-message"
	var hold *holdEnd
	startLocalWorker(t, c, queue, p, func(st session.Store) session.Store {
		hold = &holdEnd{Store: st, reached: make(chan struct{}), release: make(chan struct{})}
		return hold
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node, _ := p.Node("boss")
	var rootID string
	started := make(chan struct{})
	var startOnce sync.Once
	sink := event.SinkFunc(func(ev event.Event) {
		if r, ok := ev.(event.RunStarted); ok && rootID == "" {
			rootID = r.SessionID
			startOnce.Do(func() { close(started) })
		}
	})
	done := runRootAsync(ctx, c, st, RootRequest{Node: node, Prompt: "go", TaskQueue: queue}, sink)
	select {
	case <-hold.reached:
	case r := <-done:
		t.Fatalf("the run ended before its end was written: %+v, %v", r.out, r.err)
	}
	<-started
	if err := MessageSession(ctx, c, rootID, "opencode", "one more thing"); err != nil {
		t.Fatal(err)
	}
	close(hold.release)
	r := <-done
	if r.err != nil || r.out.StopReason != event.StopCompleted {
		t.Fatalf("run: %+v, %v", r.out, r.err)
	}
	if !strings.Contains(r.out.Output, "then: ") || !strings.Contains(r.out.Output, "one more thing") {
		t.Errorf("the session's answer %q does not answer the message", r.out.Output)
	}
	boss.mu.Lock()
	defer boss.mu.Unlock()
	if len(boss.asked) != 2 {
		t.Errorf("the model was asked %d times (%q), want 2: the prompt, then the message", len(boss.asked), boss.asked)
	}
	// The end of the lost task was written (its End ran) and is replaced
	// by the run's: the stored figures are the two turns', once.
	sess, err := st.GetSession(ctx, r.root)
	if err != nil || sess.Status != session.StatusCompleted {
		t.Errorf("the stored session: %s, %v", sess.Status, err)
	}
	if want := (event.Usage{InputTokens: 20, OutputTokens: 4}); sess.Usage != want || sess.TotalUsage != want || r.out.Usage != want {
		t.Errorf("usage: stored %+v (total %+v), the run's %+v; want %+v", sess.Usage, sess.TotalUsage, r.out.Usage, want)
	}
	recs, err := st.Events(ctx, r.root, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, rec := range recs {
		kinds = append(kinds, string(rec.Event.Kind()))
	}
	t.Logf("the session's log: %v", kinds)
	it := c.GetWorkflowHistory(ctx, r.root, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var hist []string
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		s := ev.GetEventType().String()
		if f := ev.GetWorkflowTaskFailedEventAttributes(); f != nil {
			s += "(" + f.GetCause().String() + ")"
		}
		hist = append(hist, s)
	}
	t.Logf("history: %v", hist)
}
