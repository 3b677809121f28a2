package todo

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

func call(t *testing.T, ts *Toolset, ctx context.Context, sid, args string) tool.Result {
	t.Helper()
	res, err := ts.Tools()[0].Call(ctx, tool.Call{ID: "c1", Name: TodoWrite, Args: json.RawMessage(args), SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTodoWrite(t *testing.T) {
	ts := New()
	info := ts.Tools()[0].Info()
	if info.Name != TodoWrite || info.Kind != tool.KindThink || !strings.Contains(string(info.Parameters), `"activeForm"`) {
		t.Fatalf("info = %+v", info)
	}
	var got []event.Event
	inv := &spawn.Invocation{Session: session.Session{ID: "ses_1"}, Sink: event.SinkFunc(func(e event.Event) { got = append(got, e) })}
	ctx := spawn.WithInvocation(context.Background(), inv)
	res := call(t, ts, ctx, "ses_1", `{"todos":[{"content":"Read the code","status":"completed","activeForm":"Reading the code"},{"content":"Fix the bug","status":"in_progress","activeForm":"Fixing the bug"},{"content":"Run the tests","status":"pending"}]}`)
	if res.IsError || res.Content != "Todo list updated: 3 items (1 completed, 1 in progress, 1 pending)." {
		t.Fatalf("result = %+v", res)
	}
	want := event.PlanUpdate{Entries: []event.PlanEntry{
		{Content: "Read the code", Priority: "medium", Status: "completed", ActiveForm: "Reading the code"},
		{Content: "Fix the bug", Priority: "medium", Status: "in_progress", ActiveForm: "Fixing the bug"},
		{Content: "Run the tests", Priority: "medium", Status: "pending"},
	}}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("events = %+v", got)
	}
	if l := ts.List("ses_1"); len(l) != 3 || l[1].Status != InProgress {
		t.Errorf("List = %+v", l)
	}
	if l := ts.List("ses_other"); l != nil {
		t.Errorf("another session's list = %+v", l)
	}
	// The whole list is replaced.
	call(t, ts, ctx, "ses_1", `{"todos":[]}`)
	if l := ts.List("ses_1"); len(l) != 0 {
		t.Errorf("after empty write: %+v", l)
	}
}

func TestTodoWriteRejects(t *testing.T) {
	ts := New()
	for args, want := range map[string]string{
		`{"todos":[{"content":"x","status":"done"}]}`:    `status must be pending, in_progress or completed, got "done"`,
		`{"todos":[{"content":" ","status":"pending"}]}`: "content must not be empty",
		`{"todos":"nope"}`: "invalid arguments",
	} {
		res := call(t, ts, context.Background(), "s", args)
		if !res.IsError || !strings.Contains(res.Content, want) {
			t.Errorf("%s: %+v, want error with %q", args, res, want)
		}
	}
}

func TestTodoListsBounded(t *testing.T) {
	ts := New()
	for i := range maxSessions + 10 {
		call(t, ts, context.Background(), fmt.Sprint("s", i), `{"todos":[{"content":"x","status":"pending"}]}`)
	}
	if n := len(ts.lists); n != maxSessions {
		t.Errorf("%d lists kept, want %d", n, maxSessions)
	}
	if ts.List("s0") != nil || ts.List(fmt.Sprint("s", maxSessions+9)) == nil {
		t.Error("the oldest list should be dropped, the newest kept")
	}
}
