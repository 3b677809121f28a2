package acpagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/external/acpagent"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

// delegateOnce runs prompt as parent's one delegation to the member and
// returns the child session's id and its answer.
func delegateOnce(t *testing.T, p *pool.Pool, prompt string) (string, string) {
	t.Helper()
	res, evs := run(t, context.Background(), p, "parent", prompt, nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("parent %+v", res.Result)
	}
	var child, answer string
	for _, e := range evs {
		switch v := e.(type) {
		case event.SpawnSessionStart:
			child = v.ChildSessionID
		case event.SpawnSessionEnd:
			if v.StopReason != event.StopCompleted {
				t.Fatalf("child end %+v", v)
			}
			answer = v.LastAssistantMessage
		}
	}
	if child == "" {
		t.Fatal("no child session")
	}
	return child, answer
}

// continueSession runs prompt in the stored session sid (as `agentpool
// run --session` does) and returns the result and the stream.
func continueSession(t *testing.T, p *pool.Pool, node, sid, prompt string) (pool.RunResult, []event.Event) {
	t.Helper()
	collect, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: node, SessionID: sid, Prompt: prompt}, collect)
	if err != nil {
		t.Fatal(err)
	}
	// Not checked against the stream invariants: the continued child is
	// the root of this stream, yet its run_started names the parent it
	// was stored with, as a native agent's does.
	evs := events()
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("continued run %+v", res.Result)
	}
	return res, evs
}

// continuedEvent is the stream's acp_session_continued event.
func continuedEvent(t *testing.T, evs []event.Event) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, e := range evs {
		if c, ok := e.(event.Custom); ok && c.EventType == acpagent.EventContinued {
			found = append(found, c.EventData)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s events: %v", len(found), acpagent.EventContinued, found)
	}
	return found[0]
}

// storedACPSession is the ACP session id stored on a child session.
func storedACPSession(t *testing.T, p *pool.Pool, sid string) string {
	t.Helper()
	s, err := p.Store().GetSession(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := s.Metadata[acpagent.MetaSessionID].(string)
	return id
}

func loadPool(t *testing.T, node *acpagent.Node) *pool.Pool {
	t.Helper()
	p, _ := testPool(t, nil, node, parentNode{name: "parent", child: node, times: 1})
	return p
}

// A continued child of an agent that can load sessions is continued with
// session/load: the agent has its conversation, the prompt is the new
// one alone, and what the agent replays while loading is not part of the
// new run.
func TestContinuedChildIsLoaded(t *testing.T) {
	state := t.TempDir()
	node := testAgentNode(t, acpagent.Config{Env: map[string]string{testStateEnv: state}})
	p := loadPool(t, node)
	child, answer := delegateOnce(t, p, "remember the pelican")
	if r := reply(t, answer); r.Loaded || len(r.History) != 0 {
		t.Fatalf("first reply %+v", r)
	}
	acpSession := storedACPSession(t, p, child)
	if acpSession == "" {
		t.Fatal("no ACP session id stored on the child")
	}
	res, evs := continueSession(t, p, "tester", child, "which bird?")
	r := replyOf(t, res.Result)
	if !r.Loaded || r.Prompt != "which bird?" || len(r.History) != 1 || r.History[0] != "remember the pelican" {
		t.Errorf("continued reply %+v", r)
	}
	for _, e := range evs {
		if d, ok := e.(event.PartDelta); ok && strings.Contains(d.Delta.ContentDelta, "replayed") {
			t.Errorf("a replayed update became an event: %+v", d)
		}
	}
	if got := storedACPSession(t, p, child); got != acpSession {
		t.Errorf("ACP session %q after the load, was %q", got, acpSession)
	}
	if c := continuedEvent(t, evs); c["loaded"] != true || c["acp_session_id"] != acpSession || c["agent"] != "tester" {
		t.Errorf("continued event %v", c)
	}
}

// A continued child of an agent that cannot load (no loadSession, or a
// load that fails) gets a new ACP session whose first prompt carries the
// stored conversation before the new prompt; the new id is stored.
func TestContinuedChildWithoutLoadGetsTheConversation(t *testing.T) {
	state := t.TempDir()
	for _, c := range []struct {
		name string
		env  map[string]string
		lose bool // the agent forgets its sessions: the load fails
	}{
		{"no loadSession", nil, false},
		{"load fails", map[string]string{testStateEnv: state}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			node := testAgentNode(t, acpagent.Config{Env: c.env, SystemPrompt: "Be brief."})
			p := loadPool(t, node)
			child, answer := delegateOnce(t, p, "remember the pelican")
			if r := reply(t, answer); r.Prompt != "Be brief.\n\nremember the pelican" {
				t.Fatalf("first prompt %q", r.Prompt)
			}
			first := storedACPSession(t, p, child)
			if c.lose {
				if err := os.Remove(filepath.Join(state, first)); err != nil {
					t.Fatal(err)
				}
			}
			res, evs := continueSession(t, p, "tester", child, "which bird?")
			r := replyOf(t, res.Result)
			why := "the agent cannot load sessions"
			if c.lose {
				why = "session/load failed: Invalid params"
			}
			if ev := continuedEvent(t, evs); ev["loaded"] != false || !strings.HasPrefix(ev["reason"].(string), why) {
				t.Errorf("continued event %v, want a reason that starts with %q", ev, why)
			}
			want := "Be brief.\n\nThe conversation so far:\n\nUser: remember the pelican\n\nAssistant: " + answer + "\n\nThe new message:\n\nwhich bird?"
			if r.Loaded || r.Prompt != want {
				t.Errorf("continued prompt\n%q\nwant\n%q", r.Prompt, want)
			}
			if got := storedACPSession(t, p, child); got == first || got == "" {
				t.Errorf("ACP session %q after a new one, was %q", got, first)
			}
		})
	}
}

// historyParent delegates its prompt once with history (what a worker
// with pass_message_history gives its delegations).
type historyParent struct {
	child   spawn.Node
	history []model.Message
}

func (n historyParent) Name() string                 { return "parent" }
func (n historyParent) Description() string          { return "" }
func (n historyParent) SourceType() event.SourceType { return event.SourceAgent }
func (n historyParent) ModelID() string              { return "" }
func (n historyParent) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: "parent"})
	res, err := spawn.Spawn(ctx, inv, spawn.Request{Node: n.child, Prompt: inv.Prompt, History: n.history, Mechanism: event.MechanismManual})
	if err != nil {
		inv.Sink.Emit(event.RunError{Message: err.Error(), RunID: inv.RunID, AgentName: "parent"})
		return spawn.Result{StopReason: event.StopError, Err: err}
	}
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: res.Result.Output}})
	return spawn.Result{Output: res.Result.Output}
}

// A delegation given the caller's history (pass_message_history) gives
// it to the new ACP session as text before the prompt.
func TestDelegationWithHistoryGetsItAsText(t *testing.T) {
	node := testAgentNode(t, acpagent.Config{})
	history := []model.Message{model.UserText("the bird is a pelican"), {Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: "noted"}}}}
	p, _ := testPool(t, nil, node, historyParent{child: node, history: history})
	res, _ := run(t, context.Background(), p, "parent", "which bird?", nil)
	r := replyOf(t, res.Result)
	if want := "The conversation so far:\n\nUser: the bird is a pelican\n\nAssistant: noted\n\nThe new message:\n\nwhich bird?"; r.Prompt != want {
		t.Errorf("prompt\n%q\nwant\n%q", r.Prompt, want)
	}
}
