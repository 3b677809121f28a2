package a2a_test

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	srv "github.com/agentpool/agentpool/server/a2a"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

// fed is a model that streams each text it is fed as a chunk, and ends
// its answer when its feed is closed.
type fed struct{ feed <-chan string }

func (fed) ID() string { return "fed" }

func (f fed) Stream(ctx context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for {
			select {
			case s, ok := <-f.feed:
				if !ok {
					yield(model.Chunk{Kind: model.ChunkFinish, FinishReason: model.FinishStop}, nil)
					return
				}
				if !yield(model.Chunk{Kind: model.ChunkText, Text: s}, nil) {
					return
				}
			case <-ctx.Done():
				yield(model.Chunk{}, context.Cause(ctx))
				return
			}
		}
	}
}

// artifactText is the text of an artifact update, "" for other events.
func artifactText(ev a2a.Event) string {
	au, ok := ev.(*a2a.TaskArtifactUpdateEvent)
	if !ok {
		return ""
	}
	var b strings.Builder
	for _, p := range au.Artifact.Parts {
		if tp, ok := p.(a2a.TextPart); ok {
			b.WriteString(tp.Text)
		}
	}
	return b.String()
}

// TestResubscribe: tasks/resubscribe, with the official Go SDK's client,
// to a running task whose first stream went away gets the rest of its
// events: the answer's later text and the final completed status.
func TestResubscribe(t *testing.T) {
	servertest.NoLeaks(t)
	feed := make(chan string)
	reg := pool.NewRegistry().AddModel("fed", func(config.ModelSpec) (model.Model, error) { return fed{feed}, nil })
	p := servertest.PoolWith(t, "default_agent: writer\nagents:\n  writer:\n    model: {type: fed}\n", pool.Options{Registry: reg})
	s := srv.New(p, srv.Options{})
	t.Cleanup(s.Close)
	ts := servertest.Serve(t, s)
	c := client(t, ts.URL, "")

	// The first stream: its task, and the first text; then it goes away.
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	first := make(chan a2a.Event)
	go func() {
		defer close(first)
		for ev, err := range c.SendStreamingMessage(ctx1, text("Write.")) {
			if err != nil {
				return
			}
			select {
			case first <- ev:
			case <-ctx1.Done():
				return
			}
		}
	}()
	var task *a2a.Task
	for task == nil {
		ev, ok := <-first
		if !ok {
			t.Fatal("the first stream ended before its task")
		}
		task, _ = ev.(*a2a.Task)
	}
	feed <- "Part one. "
	for ev := range first {
		if strings.Contains(artifactText(ev), "Part one.") {
			break
		}
	}
	cancel1()
	for range first { // drained: the first stream is gone
	}

	// Resubscribe; the task runs on. Text is fed until the resubscribed
	// stream shows some (it gets what comes after it subscribed), then
	// the answer's last text and its end.
	rest := make(chan a2a.Event, 16)
	errs := make(chan error, 1)
	go func() {
		defer close(rest)
		for ev, err := range c.ResubscribeToTask(context.Background(), &a2a.TaskIDParams{ID: task.ID}) {
			if err != nil {
				errs <- err
				return
			}
			rest <- ev
		}
	}()
	var got []a2a.Event
	for subscribed := false; !subscribed; {
		select {
		case feed <- "tick ":
		case ev, ok := <-rest:
			if !ok {
				t.Fatalf("the resubscribed stream ended at once: %v", <-errs)
			}
			got = append(got, ev)
			subscribed = strings.Contains(artifactText(ev), "tick")
		}
	}
	feed <- "Part two."
	close(feed)
	for ev := range rest {
		got = append(got, ev)
	}
	select {
	case err := <-errs:
		t.Fatalf("tasks/resubscribe: %v", err)
	default:
	}
	var all strings.Builder
	for _, ev := range got {
		all.WriteString(artifactText(ev))
		if tk, ok := ev.(*a2a.Task); ok && tk.ID != task.ID {
			t.Errorf("event of task %s, want %s", tk.ID, task.ID)
		}
	}
	if !strings.Contains(all.String(), "Part two.") || strings.Contains(all.String(), "Part one.") {
		t.Errorf("resubscribed text %q: want what came after the resubscription, Part two. included", all.String())
	}
	last, ok := got[len(got)-1].(*a2a.TaskStatusUpdateEvent)
	if !ok || !last.Final || last.Status.State != a2a.TaskStateCompleted || last.TaskID != task.ID {
		t.Fatalf("last resubscribed event %#v, want the task's final completed status", got[len(got)-1])
	}
	if m := last.Status.Message; m == nil || !strings.Contains(textOf(m), "Part two.") {
		t.Errorf("final status message %+v, want the whole answer", m)
	}
	// tasks/get agrees.
	done, err := c.GetTask(context.Background(), &a2a.TaskQueryParams{ID: task.ID})
	if err != nil || done.Status.State != a2a.TaskStateCompleted {
		t.Errorf("tasks/get: %+v, %v", done, err)
	}
}

func textOf(m *a2a.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if tp, ok := p.(a2a.TextPart); ok {
			b.WriteString(tp.Text)
		}
	}
	return b.String()
}
