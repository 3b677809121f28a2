package pool_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/tool"
)

// errInjected is the failure of faultyStore's writes.
var errInjected = errors.New("injected store failure")

// faultyStore fails some writes of the store it wraps. It does not keep
// the Store contract on lost writes (session.TrackWrites): these cases
// test how a run handles the errors it is answered; diskfull_test.go
// tests the account, with storetest.Faulty.
type faultyStore struct {
	session.Store
	// failCreate fails CreateSession of the sessions it selects.
	failCreate func(s session.Session) bool
	// failMessages fails AppendMessages to the sessions of these agents.
	failMessages map[string]bool
	failed       atomic.Int64
}

func (f *faultyStore) CreateSession(ctx context.Context, s session.Session) error {
	if f.failCreate != nil && f.failCreate(s) {
		f.failed.Add(1)
		return errInjected
	}
	return f.Store.CreateSession(ctx, s)
}

func (f *faultyStore) AppendMessages(ctx context.Context, sid string, msgs ...session.Message) error {
	if len(f.failMessages) > 0 {
		if s, err := f.Store.GetSession(ctx, sid); err == nil && f.failMessages[s.AgentName] {
			f.failed.Add(1)
			return errInjected
		}
	}
	return f.Store.AppendMessages(ctx, sid, msgs...)
}

// panicTool is a tool whose every call panics.
var panicTool = tool.New("explode", "A tool that panics.", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
	panic("tool exploded")
})

// echoTool answers "echo".
var echoTool = tool.New("echo", "Answers echo.", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
	return tool.Result{Content: "echo"}, nil
})

// brokenStreamServer is a Chat Completions server whose stream sends a few
// words and then drops the connection.
func brokenStreamServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, word := range []string{"Half ", "an ", "answer "} {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", word)
			w.(http.Flusher).Flush()
		}
		panic(http.ErrAbortHandler) // the connection is cut mid-stream
	}))
	t.Cleanup(srv.Close)
	return srv
}

// faultManifest: boss delegates one task to worker, whose model is
// workerModel, then answers "boss done".
func faultManifest(bossModel, workerModel, limits string) string {
	if bossModel == "" {
		bossModel = `
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: worker, prompt: "do it", description: "Work"}}]
        - "boss done"`
	}
	return fmt.Sprintf(`
default_agent: boss
agents:
  boss:
    model:%s
    tools: [subagent]
  worker:
    model:%s
limits: {%s}
`, bossModel, workerModel, limits)
}

// TestFaults injects one fault per case and checks that it ends its part
// of the run with the right stop reason, that the error is recorded in the
// event stream and in the store, and that every invariant of docs/spec/EVENTS.md
// §3 holds.
func TestFaults(t *testing.T) {
	type want struct {
		root  event.StopReason // stop reason of the root run
		child event.StopReason // stop reason of the worker's spawn ("" when it never started)
		// errText must appear in an event of kind errKind of session
		// errSession ("root" or "child"), in the stream and in the store.
		errText    string
		errKind    event.Kind
		errSession string
		// childMetaErr: the worker's stored record carries the error.
		childMetaErr bool
	}
	cases := []struct {
		name   string
		worker string // the worker's model
		boss   string // the boss's model ("" = delegate, then answer)
		limits string
		setup  func(t *testing.T, st session.Store) (session.Store, pool.Options)
		want   want
		// extra checks the stream further.
		extra func(t *testing.T, root string, evs []event.Event)
	}{
		{
			name: "tool panics",
			worker: `
      type: scripted
      turns:
        - tool_calls: [{name: explode, args: {}}]
        - "worker done"`,
			setup: func(t *testing.T, st session.Store) (session.Store, pool.Options) {
				return st, pool.Options{ExtraTools: []tool.Tool{panicTool}}
			},
			want: want{root: event.StopCompleted, child: event.StopCompleted, errText: "tool explode panicked: tool exploded", errKind: event.KindToolCallComplete, errSession: "child"},
		},
		{
			name: "hook listener panics",
			worker: `
      type: scripted
      turns:
        - tool_calls: [{name: echo, args: {}}]
        - "worker done"`,
			setup: func(t *testing.T, st session.Store) (session.Store, pool.Options) {
				reg := hook.New(hook.Options{})
				reg.OnPreExecute.Use(func(ctx context.Context, in hook.ToolCall, next hook.Next[hook.ToolCall, hook.ToolDecision]) hook.ToolDecision {
					if in.ToolName == "echo" {
						panic("pre-execute listener exploded")
					}
					return next(ctx, in)
				}, hook.WithName("exploder"))
				reg.OnSubagentEnd.Register(func(context.Context, hook.SubagentEnd) error { panic("subagent/end listener exploded") })
				t.Cleanup(func() { reg.Close(context.Background()) })
				return st, pool.Options{Hooks: reg, ExtraTools: []tool.Tool{echoTool}}
			},
			want: want{root: event.StopCompleted, child: event.StopCompleted, errText: "pre-execute listener exploded", errKind: event.KindCustom, errSession: "child"},
			extra: func(t *testing.T, root string, evs []event.Event) {
				// The subagent/end listener fired for the boss's child: its
				// fault is the boss's.
				if !hasError(t, evs, root, root, event.KindCustom, "subagent/end listener exploded") {
					t.Error("no hook_error of the subagent/end listener in the root's events")
				}
			},
		},
		{
			name: "model stream breaks (scripted)",
			worker: `
      type: scripted
      turns:
        - {text: "half an answer and then", error: "connection reset by peer"}`,
			want: want{root: event.StopCompleted, child: event.StopError, errText: "connection reset by peer", errKind: event.KindRunError, errSession: "child", childMetaErr: true},
		},
		{
			name:   "model stream breaks (HTTP)",
			worker: "", // set below: an openai model on brokenStreamServer
			want:   want{root: event.StopCompleted, child: event.StopError, errText: "stream broken", errKind: event.KindRunError, errSession: "child", childMetaErr: true},
		},
		{
			name: "root model stream breaks",
			boss: `
      type: scripted
      turns:
        - {text: "let me think", error: "upstream closed the stream"}`,
			worker: ` {type: test}`,
			want:   want{root: event.StopError, errText: "upstream closed the stream", errKind: event.KindRunError, errSession: "root"},
		},
		{
			name: "store write fails (messages)",
			worker: `
      type: scripted
      turns: ["worker done"]`,
			setup: func(t *testing.T, st session.Store) (session.Store, pool.Options) {
				return &faultyStore{Store: st, failMessages: map[string]bool{"worker": true}}, pool.Options{}
			},
			want: want{root: event.StopCompleted, child: event.StopError, errText: "store messages: injected store failure", errKind: event.KindRunError, errSession: "child", childMetaErr: true},
		},
		{
			name: "store write fails (child session)",
			worker: `
      type: scripted
      turns: ["worker done"]`,
			setup: func(t *testing.T, st session.Store) (session.Store, pool.Options) {
				return &faultyStore{Store: st, failCreate: func(s session.Session) bool { return s.ParentID != "" }}, pool.Options{}
			},
			want: want{root: event.StopCompleted, errText: "cannot spawn worker: store: injected store failure", errKind: event.KindToolCallComplete, errSession: "root"},
		},
		{
			name: "child never answers (spawn_timeout)",
			worker: `
      type: scripted
      delay: 1h
      turns: ["never said"]`,
			limits: "spawn_timeout: 50ms",
			want:   want{root: event.StopCompleted, child: event.StopError, errText: "spawn timeout after 50ms", errKind: event.KindRunError, errSession: "child", childMetaErr: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			worker := tc.worker
			if worker == "" {
				worker = fmt.Sprintf(`
      type: openai
      model: m
      base_url: %s/v1
      api_key: sk-test`, brokenStreamServer(t).URL)
			}
			m, err := config.Parse("faults.yaml", []byte(faultManifest(tc.boss, worker, tc.limits)))
			if err != nil {
				t.Fatal(err)
			}
			inner := memory.New()
			var st session.Store = inner
			var opts pool.Options
			if tc.setup != nil {
				st, opts = tc.setup(t, inner)
			}
			opts.Store, opts.Registry = st, batteries.Registry()
			p, err := pool.New(m, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			sink, events := eventtest.Collect()
			res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "go"}, sink)
			if err != nil {
				t.Fatal(err)
			}
			evs := events()
			root := res.SessionID
			if err := eventtest.CheckInvariants(root, evs); err != nil {
				t.Fatal(err)
			}
			if tc.extra != nil {
				tc.extra(t, root, evs)
			}
			if res.Result.StopReason != tc.want.root {
				t.Errorf("root stop reason %s (%v), want %s", res.Result.StopReason, res.Result.Err, tc.want.root)
			}
			if fs, ok := st.(*faultyStore); ok && fs.failed.Load() == 0 {
				t.Error("the store fault was never injected")
			}

			// The worker's spawn, if any.
			var end *event.SpawnSessionEnd
			for _, e := range evs {
				if v, ok := e.(event.SpawnSessionEnd); ok && v.SourceName == "worker" {
					end = &v
				}
			}
			child := ""
			switch {
			case tc.want.child == "" && end != nil:
				t.Errorf("the worker started and ended %s; want no spawn", end.StopReason)
			case tc.want.child != "" && end == nil:
				t.Fatalf("no spawn_session_end of the worker")
			case end != nil:
				child = end.ChildSessionID
				if end.StopReason != tc.want.child {
					t.Errorf("worker ended %s (%q), want %s", end.StopReason, end.Error, tc.want.child)
				}
				if tc.want.child == event.StopError && !strings.Contains(end.Error, tc.want.errText) {
					t.Errorf("spawn_session_end error %q lacks %q", end.Error, tc.want.errText)
				}
			}
			errSession := root
			if tc.want.errSession == "child" {
				errSession = child
			}

			// The error is in the stream, in an event of the right session
			// and kind...
			if !hasError(t, evs, root, errSession, tc.want.errKind, tc.want.errText) {
				t.Errorf("no %s of session %s carrying %q in the stream", tc.want.errKind, errSession, tc.want.errText)
			}
			// ... and in that session's stored log, which keeps the
			// stream's order.
			ctx := context.Background()
			recs, err := inner.Events(ctx, errSession, 0)
			if err != nil {
				t.Fatal(err)
			}
			stored := make([]event.Event, len(recs))
			for i, r := range recs {
				stored[i] = r.Event
			}
			if !hasError(t, stored, errSession, errSession, tc.want.errKind, tc.want.errText) {
				t.Errorf("no %s carrying %q in the stored log of %s", tc.want.errKind, tc.want.errText, errSession)
			}
			tree, err := session.Subtree(ctx, inner, root)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tree {
				checkStoredOrder(t, inner, root, s.ID, evs)
				if s.Status == session.StatusRunning {
					t.Errorf("session %s (%s) still running in the store", s.ID, s.AgentName)
				}
			}
			rootRec, _ := inner.GetSession(ctx, root)
			if string(rootRec.Status) != string(session.StatusFromStop(tc.want.root)) {
				t.Errorf("stored root status %s, want that of %s", rootRec.Status, tc.want.root)
			}
			if tc.want.root == event.StopError {
				if e, _ := rootRec.Metadata["error"].(string); !strings.Contains(e, tc.want.errText) {
					t.Errorf("stored root error %q lacks %q", e, tc.want.errText)
				}
			}
			if child != "" {
				rec, err := inner.GetSession(ctx, child)
				if err != nil {
					t.Fatal(err)
				}
				if rec.StopReason != tc.want.child {
					t.Errorf("stored worker stop reason %s, want %s", rec.StopReason, tc.want.child)
				}
				e, _ := rec.Metadata["error"].(string)
				if tc.want.childMetaErr && !strings.Contains(e, tc.want.errText) {
					t.Errorf("stored worker error %q lacks %q", e, tc.want.errText)
				}
			}
		})
	}
}

// hasError reports whether evs (a stream owned by owner) holds an event of
// kind produced by session sid whose JSON contains text.
func hasError(t *testing.T, evs []event.Event, owner, sid string, kind event.Kind, text string) bool {
	t.Helper()
	for _, e := range evs {
		s, inner := event.Unwrap(owner, e)
		if s != sid || inner == nil || inner.Kind() != kind {
			continue
		}
		if v, ok := inner.(event.ToolCallComplete); ok && !v.IsError {
			continue
		}
		b, err := event.Marshal(inner)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// checkStoredOrder checks that the events session sid produced in the root
// stream are in its stored log, in the same order (the log may hold more:
// records written to the store only).
func checkStoredOrder(t *testing.T, st session.Store, root, sid string, evs []event.Event) {
	t.Helper()
	var want []event.Kind
	for _, e := range evs {
		if s, inner := event.Unwrap(root, e); s == sid && inner != nil {
			want = append(want, inner.Kind())
		}
	}
	recs, err := st.Events(context.Background(), sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, r := range recs {
		if i < len(want) && r.Event.Kind() == want[i] {
			i++
		}
	}
	if i != len(want) {
		t.Errorf("session %s: the stored log (%d records) lacks the stream's events from #%d (%v)", sid, len(recs), i, want[i])
	}
}
