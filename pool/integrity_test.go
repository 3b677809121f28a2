package pool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/strictapi"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

// crashed is what a run killed in the middle of a delegation left in a
// store.
type crashed struct {
	root, child, call string
}

// writeCrashed writes into st what a process killed in the middle of a
// delegation leaves: the root's conversation ends with an assistant task
// call that has no result, its log has the call's tool_call_start and the
// child's spawn_session_start and nothing after, and the child is still
// "running" with half a stream and no end. Nobody holds the sessions: the
// process that ran them is gone.
func writeCrashed(t *testing.T, st session.Store) crashed {
	t.Helper()
	ctx := context.Background()
	now := time.Now().Add(-time.Minute)
	c := crashed{root: "ses_root_of_crash", child: "ses_child_of_crash", call: "call_task_1"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.CreateSession(ctx, session.Session{ID: c.root, AgentName: "boss", SourceType: event.SourceAgent, Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}))
	must(st.CreateSession(ctx, session.Session{ID: c.child, ParentID: c.root, Depth: 1, AgentName: "helper", SourceType: event.SourceAgent, Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}))
	args := json.RawMessage(`{"agent_or_team":"helper","prompt":"dig","description":"Dig"}`)
	must(st.AppendMessages(ctx, c.root,
		session.Message{ID: "msg_1", CreatedAt: now, Message: model.UserText("first question")},
		session.Message{ID: "msg_2", CreatedAt: now, Message: model.Message{Role: model.RoleAssistant, Parts: []model.Part{
			{Kind: model.PartToolCall, ToolCallID: c.call, ToolName: "task", Args: args},
		}}}))
	must(st.AppendMessages(ctx, c.child, session.Message{ID: "msg_3", CreatedAt: now, Message: model.UserText("dig")}))
	must(st.AppendEvents(ctx, c.root,
		event.RunStarted{SessionID: c.root, RunID: "run_1", AgentName: "boss"},
		event.ToolCallStart{ToolCallID: c.call, ToolName: "task", Title: "Dig", ToolKind: "other", RawInput: args},
		event.SpawnSessionStart{ChildSessionID: c.child, ParentSessionID: c.root, ToolCallID: c.call, SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: "helper", SourceType: event.SourceAgent, Depth: 1, Description: "Dig",
			Metadata: map[string]any{"prompt": "dig", "max_depth": 5}}))
	must(st.AppendEvents(ctx, c.child,
		event.RunStarted{SessionID: c.child, RunID: "run_2", AgentName: "helper", ParentSessionID: c.root},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText, Content: "half an ans"}}))
	return c
}

// A session whose process died in the middle of a delegation is resumed
// as a valid conversation: the provider gets the interrupted call's result
// (an error saying so) right after the call, and the log gives the child
// its spawn_session_end (interrupted) and the call its tool_call_complete,
// so that a replay shows every delegation ending. Each provider's fake
// rejects a dangling tool call the way the real API does.
func TestResumeAfterCrashMidDelegation(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			var srv *strictapi.Server
			var spec string
			switch provider {
			case "openai":
				srv = strictapi.OpenAI(t, "resumed fine")
				spec = fmt.Sprintf("{type: openai, model: gpt-strict, base_url: %q, api_key: sk-test}", srv.URL+"/v1")
			default:
				srv = strictapi.Anthropic(t, "resumed fine")
				spec = fmt.Sprintf("{type: anthropic, model: claude-strict, base_url: %q, api_key: sk-ant-test}", srv.URL)
			}
			m, err := config.Parse("resume.yaml", []byte(`
default_agent: boss
agents:
  boss:
    model: `+spec+`
    tools: [subagent]
  helper:
    model: {type: test, custom_output_text: "dug"}
`))
			if err != nil {
				t.Fatal(err)
			}
			st := memory.New()
			c := writeCrashed(t, st)
			p, err := pool.New(m, pool.Options{Store: st, Registry: batteries.Registry()})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			res, err := p.RunSink(ctx, pool.RunRequest{SessionID: c.root, Prompt: "go on"}, event.SinkFunc(func(event.Event) {}))
			if err != nil {
				t.Fatal(err)
			}
			if rej := srv.Rejected(); len(rej) > 0 {
				t.Fatalf("the provider rejected the resumed conversation: %s", rej[0])
			}
			if res.Result.StopReason != event.StopCompleted || res.Result.Output != "resumed fine" {
				t.Fatalf("resumed run: %s %q (%v)", res.Result.StopReason, res.Result.Output, res.Result.Err)
			}
			if got := resultSent(t, provider, srv.Bodies()[0], c.call); !strings.Contains(got, "interrupted") {
				t.Errorf("the interrupted call's result sent to the provider is %q", got)
			}

			// The log: the child ended (interrupted), then the call completed
			// with an error, all before the resumed run started.
			recs, err := st.Events(ctx, c.root, 0)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, r := range recs {
				switch e := r.Event.(type) {
				case event.SpawnSessionEnd:
					if e.ChildSessionID != c.child || e.StopReason != "interrupted" || e.ToolCallID != c.call {
						t.Errorf("spawn_session_end %+v", e)
					}
				case event.ToolCallComplete:
					if e.ToolCallID == c.call && (!e.IsError || !strings.Contains(e.ToolResult, "interrupted")) {
						t.Errorf("tool_call_complete of the interrupted call: %+v", e)
					}
				}
				kinds = append(kinds, string(r.Event.Kind()))
			}
			want := "run_started tool_call_start spawn_session_start spawn_session_end tool_call_complete run_error run_started"
			if got := strings.Join(kinds, " "); !strings.HasPrefix(got, want) {
				t.Errorf("root log:\n got %s\nwant %s ...", got, want)
			}
			checkEveryStartEnds(t, st, c.root)
			child, err := st.GetSession(ctx, c.child)
			if err != nil || child.Status != session.StatusInterrupted {
				t.Errorf("child after the resume: %s (%v)", child.Status, err)
			}
		})
	}
}

// resultSent returns the text of the tool result for call in a request
// body of the provider.
func resultSent(t *testing.T, provider string, body map[string]any, call string) string {
	t.Helper()
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		if provider == "openai" {
			if msg["role"] == "tool" && msg["tool_call_id"] == call {
				s, _ := msg["content"].(string)
				if s == "" {
					b, _ := json.Marshal(msg["content"])
					s = string(b)
				}
				return s
			}
			continue
		}
		content, _ := msg["content"].([]any)
		for _, c := range content {
			b, _ := c.(map[string]any)
			if b["type"] == "tool_result" && b["tool_use_id"] == call {
				out, _ := json.Marshal(b["content"])
				return string(out)
			}
		}
	}
	t.Errorf("no tool result for %s in the request: %v", call, msgs)
	return ""
}

// checkEveryStartEnds checks the replayed log of root's tree: every
// spawn_session_start has exactly one spawn_session_end after it.
func checkEveryStartEnds(t *testing.T, st session.Store, root string) {
	t.Helper()
	rs, err := session.ReplayTree(context.Background(), st, root)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]int{}
	for _, r := range rs {
		_, inner := event.Unwrap(root, r.Event)
		switch e := inner.(type) {
		case event.SpawnSessionStart:
			open[e.ChildSessionID]++
		case event.SpawnSessionEnd:
			if open[e.ChildSessionID] != 1 {
				t.Errorf("spawn_session_end of %s without one open start", e.ChildSessionID)
			}
			open[e.ChildSessionID]--
		}
	}
	for child, n := range open {
		if n != 0 {
			t.Errorf("child %s has a spawn_session_start and no spawn_session_end in the replay", child)
		}
	}
}

// gateStore, once armed, holds every Messages call (which a resume makes
// to read the history) until each of the runs it waits for has either
// reached it or returned, so that concurrent resumes of one session are
// all past their checks together before any of them starts.
type gateStore struct {
	session.Store

	mu                      sync.Mutex
	want, arrived, returned int
	open                    chan struct{}
}

func newGateStore(st session.Store) *gateStore {
	g := &gateStore{Store: st, open: make(chan struct{})}
	close(g.open)
	return g
}

// arm makes the gate wait for want runs.
func (g *gateStore) arm(want int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.want, g.arrived, g.returned, g.open = want, 0, 0, make(chan struct{})
}

func (g *gateStore) Messages(ctx context.Context, sid string) ([]session.Message, error) {
	g.mu.Lock()
	g.arrived++
	g.checkLocked()
	open := g.open
	g.mu.Unlock()
	<-open
	return g.Store.Messages(ctx, sid)
}

// runReturned is called when a run returned.
func (g *gateStore) runReturned() {
	g.mu.Lock()
	g.returned++
	g.checkLocked()
	g.mu.Unlock()
}

func (g *gateStore) checkLocked() {
	if g.arrived+g.returned >= g.want {
		select {
		case <-g.open:
		default:
			close(g.open)
		}
	}
}

// Two resumes of one session at once in one process: exactly one runs and
// the other is refused as already running.
func TestConcurrentResumesRunOnce(t *testing.T) {
	m, err := config.Parse("twice.yaml", []byte(`
agents:
  boss:
    model: {type: test, custom_output_text: "answer"}
`))
	if err != nil {
		t.Fatal(err)
	}
	gate := newGateStore(memory.New())
	p, err := pool.New(m, pool.Options{Store: gate})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	first, err := p.RunSink(ctx, pool.RunRequest{Prompt: "first"}, event.SinkFunc(func(event.Event) {}))
	if err != nil {
		t.Fatal(err)
	}
	for trial := range 20 {
		gate.arm(2)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				_, errs[i] = p.RunSink(ctx, pool.RunRequest{SessionID: first.SessionID, Prompt: fmt.Sprintf("again %d", i)}, event.SinkFunc(func(event.Event) {}))
				gate.runReturned()
			})
		}
		wg.Wait()
		ran := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ran++
			case !strings.Contains(err.Error(), "is already running (in process"):
				t.Fatalf("trial %d: refusal %q does not say where the session runs", trial, err)
			}
		}
		if ran != 1 {
			t.Fatalf("trial %d: %d of 2 concurrent resumes ran (errors %v), want exactly 1", trial, ran, errs)
		}
	}
}
