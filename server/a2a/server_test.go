package a2a_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/agentpool/agentpool/pool"
	srv "github.com/agentpool/agentpool/server/a2a"
	"github.com/agentpool/agentpool/server/a2a/a2atest"
	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
)

// nestedYAML: planner -> task -> parallel team -> searcher -> worker
// summarizer (depth 3), critic beside searcher.
const nestedYAML = `
default_agent: planner
agents:
  planner:
    description: Splits the job and hands it out.
    model:
      type: test
      call_tools: [task]
      tool_args:
        task: {agent_or_team: research_team, prompt: "Collect facts.", description: "Research"}
      custom_output_text: "Plan complete."
    tools:
      - type: subagent
  searcher:
    model:
      type: test
      call_tools: [ask_summarizer]
      tool_args:
        ask_summarizer: {prompt: "Summarize."}
      custom_output_text: "Search finished."
    workers: [summarizer]
  summarizer:
    model: {type: test, custom_output_text: "Summary: goroutines."}
  critic:
    model: {type: scripted, turns: [{text: "Looks right."}]}
  waiter:
    model: {type: blocking}
teams:
  research_team:
    description: Searches and criticizes.
    mode: parallel
    members: [searcher, critic]
`

func client(t *testing.T, base, path string) *a2aclient.Client {
	t.Helper()
	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, base+path)
	if err != nil {
		t.Fatalf("resolve the card at %s: %v", base+path, err)
	}
	c, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c
}

func text(s string) *a2a.MessageSendParams {
	return &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: s})}
}

func TestCards(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.PoolWith(t, nestedYAML, pool.Options{Registry: servertest.BlockingRegistry(make(chan string, 1))})
	s := srv.New(p, srv.Options{})
	t.Cleanup(s.Close)
	ts := servertest.Serve(t, s)
	card, err := agentcard.DefaultResolver.Resolve(context.Background(), ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	if card.Name != "planner" || card.URL != ts.URL+"/" || !card.Capabilities.Streaming || card.ProtocolVersion != srv.ProtocolVersion ||
		card.PreferredTransport != a2a.TransportProtocolJSONRPC || card.Description != "Splits the job and hands it out." {
		t.Errorf("default card = %+v", card)
	}
	team, err := agentcard.DefaultResolver.Resolve(context.Background(), ts.URL+"/agents/research_team")
	if err != nil {
		t.Fatal(err)
	}
	if team.Name != "research_team" || team.URL != ts.URL+"/agents/research_team" || len(team.Skills) != 1 || !strings.HasPrefix(team.Skills[0].Tags[0], "team") {
		t.Errorf("team card = %+v", team)
	}
	_, err = agentcard.DefaultResolver.Resolve(context.Background(), ts.URL+"/agents/nobody")
	var notOK *agentcard.ErrStatusNotOK
	if !errors.As(err, &notOK) || notOK.StatusCode != http.StatusNotFound {
		t.Errorf("unknown agent's card: %v, want 404", err)
	}
}

// TestSendShowsDelegation: message/send with the SDK's client runs the
// default agent; the task has the answer and one artifact per delegation,
// tasks/get returns it, and the store has the tree.
func TestSendShowsDelegation(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.PoolWith(t, nestedYAML, pool.Options{Registry: servertest.BlockingRegistry(make(chan string, 1))})
	s := srv.New(p, srv.Options{})
	t.Cleanup(s.Close)
	ts := servertest.Serve(t, s)
	c := client(t, ts.URL, "")
	res, err := c.SendMessage(context.Background(), text("Plan the research."))
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("result is %T, want a task", res)
	}
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("state %s, want completed (%+v)", task.Status.State, task.Status.Message)
	}
	if got := a2atest.Text(task.Status.Message); !strings.Contains(got, "Plan complete.") {
		t.Errorf("final message %q", got)
	}
	names := map[string]string{}
	for _, a := range task.Artifacts {
		names[a.Name] += a2atest.PartsText(a.Parts)
	}
	for _, want := range []string{"response", "research_team", "searcher", "critic", "summarizer"} {
		if names[want] == "" {
			t.Errorf("no artifact %q; artifacts: %v", want, names)
		}
	}
	if !strings.Contains(names["response"], "Plan complete.") || names["critic"] != "Looks right." {
		t.Errorf("artifacts %v", names)
	}
	got, err := c.GetTask(context.Background(), &a2a.TaskQueryParams{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted || len(got.Artifacts) != len(task.Artifacts) {
		t.Fatalf("tasks/get: %+v, %v", got, err)
	}
	sid := a2atest.SessionOf(t, task)
	a2atest.CheckTree(t, p.Store(), sid, "planner", "research_team", "searcher", "critic", "summarizer")
}

// TestStreamShowsDelegation: message/stream gives the task, a working
// status naming the session, a status for each delegation's start and
// end, then the final status; a second message in the same context
// continues the session.
func TestStreamShowsDelegation(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.PoolWith(t, nestedYAML, pool.Options{Registry: servertest.BlockingRegistry(make(chan string, 1))})
	s := srv.New(p, srv.Options{})
	t.Cleanup(s.Close)
	ts := servertest.Serve(t, s)
	c := client(t, ts.URL, "")
	var evs []a2a.Event
	for ev, err := range c.SendStreamingMessage(context.Background(), text("Plan the research.")) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if _, ok := evs[0].(*a2a.Task); !ok {
		t.Fatalf("first event %T, want the task", evs[0])
	}
	var started, ended []string
	for _, ev := range evs {
		su, ok := ev.(*a2a.TaskStatusUpdateEvent)
		if !ok {
			continue
		}
		m, _ := su.Metadata[srv.MetaKey].(map[string]any)
		switch m["event"] {
		case "spawn_session_start":
			started = append(started, m["source_name"].(string))
		case "spawn_session_end":
			ended = append(ended, m["source_name"].(string)+":"+m["stop_reason"].(string))
		}
	}
	slices.Sort(started)
	slices.Sort(ended)
	if want := []string{"critic", "research_team", "searcher", "summarizer"}; !slices.Equal(started, want) {
		t.Errorf("delegations started %v, want %v", started, want)
	}
	if want := []string{"critic:completed", "research_team:completed", "searcher:completed", "summarizer:completed"}; !slices.Equal(ended, want) {
		t.Errorf("delegations ended %v, want %v", ended, want)
	}
	last, ok := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent)
	if !ok || !last.Final || last.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("last event %#v, want the final completed status", evs[len(evs)-1])
	}
	first := a2atest.SessionOfEvents(t, evs)

	// The same context continues the session.
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "Again."})
	msg.ContextID = last.ContextID
	res, err := c.SendMessage(context.Background(), &a2a.MessageSendParams{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	if sid := a2atest.SessionOf(t, res.(*a2a.Task)); sid != first {
		t.Errorf("context %s ran in session %s, then %s", last.ContextID, first, sid)
	}
	msgs, err := p.Store().Messages(context.Background(), first)
	if err != nil || len(msgs) < 4 {
		t.Errorf("the continued session has %d messages (%v), want both runs'", len(msgs), err)
	}
}

// TestCancel: tasks/cancel ends a running task canceled and its session
// aborted.
func TestCancel(t *testing.T) {
	servertest.NoLeaks(t)
	started := make(chan string, 1)
	p := servertest.PoolWith(t, nestedYAML, pool.Options{Registry: servertest.BlockingRegistry(started)})
	s := srv.New(p, srv.Options{})
	t.Cleanup(s.Close)
	ts := servertest.Serve(t, s)
	c := client(t, ts.URL, "/agents/waiter")
	events := make(chan a2a.Event, 64)
	go func() {
		defer close(events)
		for ev, err := range c.SendStreamingMessage(context.Background(), text("wait")) {
			if err != nil {
				return
			}
			events <- ev
		}
	}()
	var task *a2a.Task
	for task == nil {
		if tk, ok := (<-events).(*a2a.Task); ok {
			task = tk
		}
	}
	sid := <-started
	got, err := c.CancelTask(context.Background(), &a2a.TaskIDParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateCanceled {
		t.Errorf("tasks/cancel: state %s", got.Status.State)
	}
	var final *a2a.TaskStatusUpdateEvent
	for ev := range events {
		if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && su.Final {
			final = su
		}
	}
	if final == nil || final.Status.State != a2a.TaskStateCanceled {
		t.Errorf("the stream's final status: %+v", final)
	}
	sess := a2atest.Session(t, p.Store(), sid)
	if sess.Status != session.StatusAborted && sess.StopReason != "aborted" {
		t.Errorf("session %s: status %s, stop reason %s; want aborted", sid, sess.Status, sess.StopReason)
	}
}

// TestToken: with a token the cards stay public and declare the bearer
// scheme; JSON-RPC needs the token.
func TestToken(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.PoolWith(t, nestedYAML, pool.Options{Registry: servertest.BlockingRegistry(make(chan string, 1))})
	s := srv.New(p, srv.Options{Token: "s3cret"})
	t.Cleanup(s.Close)
	ts := servertest.Serve(t, s)
	card, err := agentcard.DefaultResolver.Resolve(context.Background(), ts.URL+"/agents/critic")
	if err != nil {
		t.Fatal(err)
	}
	if len(card.SecuritySchemes) != 1 || len(card.Security) != 1 {
		t.Errorf("card security %+v %+v", card.SecuritySchemes, card.Security)
	}
	a := servertest.PostJSON(t, ts.URL+"/agents/critic", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`)
	if a.Code != http.StatusUnauthorized {
		t.Errorf("without the token: %d %s", a.Code, a.Body)
	}
	a = servertest.PostJSON(t, ts.URL+"/agents/critic", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`,
		"Authorization", "Bearer s3cret")
	if a.Code != http.StatusOK || !strings.Contains(a.Body, "Looks right.") {
		t.Errorf("with the token: %d %s", a.Code, a.Body)
	}
}

// TestBadInput: a message without text fails its task with the reason; a
// body over the limit is refused.
func TestBadInput(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.PoolWith(t, nestedYAML, pool.Options{Registry: servertest.BlockingRegistry(make(chan string, 1))})
	s := srv.New(p, srv.Options{MaxBodyBytes: 1024})
	t.Cleanup(s.Close)
	ts := servertest.Serve(t, s)
	c := client(t, ts.URL, "/agents/critic")
	for _, c2 := range []struct {
		part a2a.Part
		want string
	}{
		{a2a.TextPart{Text: "  "}, "no text"},
		{a2a.FilePart{File: a2a.FileURI{URI: "https://example.com/x.png"}}, "file parts are not supported"},
	} {
		res, err := c.SendMessage(context.Background(), &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, c2.part)})
		if err != nil {
			t.Fatal(err)
		}
		if task := res.(*a2a.Task); task.Status.State != a2a.TaskStateRejected || !strings.Contains(a2atest.Text(task.Status.Message), c2.want) {
			t.Errorf("message of %T: %s %q, want rejected with %q", c2.part, task.Status.State, a2atest.Text(task.Status.Message), c2.want)
		}
	}
	a := servertest.PostJSON(t, ts.URL+"/agents/critic", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"x":"`+strings.Repeat("a", 2048)+`"}}`)
	if a.Code != http.StatusRequestEntityTooLarge && !strings.Contains(a.Body, "error") {
		t.Errorf("large body: %d %s", a.Code, a.Body)
	}
}
