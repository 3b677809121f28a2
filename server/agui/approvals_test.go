package agui

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

// approvalYAML: lead --task--> mid --task--> writer, whose Write asks (the
// default rule of Write); the writer then answers with the tool's result.
const approvalYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: mid, description: Delegate on, prompt: Have the writer write hello.md.}}]
        - text: "lead done"
    tools: [subagent]
  mid:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: writer, description: Write the note, prompt: Write hello.md.}}]
        - text: "mid done"
    tools: [subagent]
  writer:
    tools: [file_access]
    model:
      type: test
      call_tools: [Write]
      tool_args:
        Write: {file_path: hello.md, content: "hello\n"}
`

// approvalFixture is a server whose pool asks through a broker the server
// attaches to, over a workspace of its own.
type approvalFixture struct {
	url, ws string
	broker  *approval.Broker
	pool    *pool.Pool
	server  *Server
}

func approvalServer(t *testing.T) approvalFixture {
	t.Helper()
	f := approvalFixture{ws: t.TempDir()}
	reg := hook.New(hook.Options{})
	var err error
	if f.broker, err = approval.New(approval.Options{}); err != nil {
		t.Fatal(err)
	}
	reg.UseBroker(f.broker)
	f.pool = servertest.PoolWith(t, approvalYAML, pool.Options{Workspace: f.ws, Hooks: reg})
	var ts *httptest.Server
	f.server, ts = newServer(t, f.pool, Options{Approvals: f.broker})
	t.Cleanup(f.server.Close)
	f.url = ts.URL
	return f
}

func mustMarshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// liveRun is a run whose events the test reads as they come.
type liveRun struct {
	t      *testing.T
	events chan ev
	seen   []ev
	cancel context.CancelFunc
}

// startRun posts a run on thread and reads its stream in the background.
func startRun(t *testing.T, url, thread string) *liveRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/", strings.NewReader(runBody(thread, "Write it.")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		t.Fatalf("run: %d", res.StatusCode)
	}
	r := &liveRun{t: t, events: make(chan ev, 1024), cancel: cancel}
	go func() {
		defer res.Body.Close()
		defer close(r.events)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
		for sc.Scan() {
			if line := sc.Text(); line != "" {
				for _, e := range parseSSE(t, []byte(line+"\n\n")) {
					r.events <- e
				}
			}
		}
	}()
	t.Cleanup(cancel)
	return r
}

// until reads events up to the first that match selects, and returns it
// (nil when the stream ended first).
func (r *liveRun) until(match func(ev) bool) ev {
	r.t.Helper()
	for {
		select {
		case e, ok := <-r.events:
			if !ok {
				return nil
			}
			r.seen = append(r.seen, e)
			if match(e) {
				return e
			}
		case <-time.After(servertest.WaitBound):
			r.t.Fatalf("no matching event within %v; seen %d events", servertest.WaitBound, len(r.seen))
		}
	}
}

// rest reads the stream to its end and returns every event.
func (r *liveRun) rest() []ev {
	r.t.Helper()
	r.until(func(ev) bool { return false })
	return r.seen
}

func custom(name string) func(ev) bool {
	return func(e ev) bool { return e["type"] == wire.TypeCustom && e["name"] == name }
}

// subagentNamed is the subagentRunId of the SUBAGENT_STARTED named name.
func subagentNamed(evs []ev, name string) string {
	for _, e := range evs {
		if e["type"] == wire.TypeSubagentStarted && e["name"] == name {
			return e["subagentRunId"].(string)
		}
	}
	return ""
}

// toolCallNamed is the id of the tool call named name: the root's
// (TOOL_CALL_START) or a subagent's (in its activity).
func toolCallNamed(evs []ev, name string) string {
	for _, e := range evs {
		if e["type"] == wire.TypeToolCallStart && e["toolCallName"] == name {
			return e["toolCallId"].(string)
		}
	}
	for _, e := range evs {
		if e["type"] != wire.TypeActivityDelta {
			continue
		}
		for _, o := range e["patch"].([]any) {
			if v, ok := o.(map[string]any)["value"].(map[string]any); ok && v["name"] == name && v["id"] != nil {
				return v["id"].(string)
			}
		}
	}
	return ""
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

func replyTo(t *testing.T, url, id, body string) (int, map[string]any) {
	t.Helper()
	a := servertest.PostJSON(t, url+"/approvals/"+id, body)
	return a.Code, decodeJSON(t, a.Body)
}

func listApprovals(t *testing.T, url string) []any {
	t.Helper()
	a := servertest.Do(t, "GET", url, "")
	if a.Code != 200 {
		t.Fatalf("GET %s: %d %s", url, a.Code, a.Body)
	}
	return decodeJSON(t, a.Body)["approvals"].([]any)
}

// A grandchild's Write asks: the stream announces it on the grandchild,
// GET /approvals lists it, bad answers are refused with the field, the
// first good answer lets the write happen and a second one gets 409; the
// stream says how it was settled before the tool's result.
func TestApprovalAllowOnceNested(t *testing.T) {
	servertest.NoLeaks(t)
	f := approvalServer(t)
	url, ws, b := f.url, f.ws, f.broker
	run := startRun(t, url, "t-allow")
	asked := run.until(custom(EventApprovalAsked))
	if asked == nil {
		t.Fatalf("no approval_asked; stream: %v", run.seen)
	}
	writer, mid := subagentNamed(run.seen, "writer"), subagentNamed(run.seen, "mid")
	v := asked["value"].(map[string]any)
	want := map[string]any{"sessionId": writer, "parentSessionId": mid, "agent": "writer", "tool": "Write",
		"title": "Write hello.md", "toolCallId": toolCallNamed(run.seen, "Write"),
		"reason": "the tool_approval policy of agent writer asks before Write"}
	for k, w := range want {
		if v[k] != w {
			t.Errorf("value.%s = %v, want %v", k, v[k], w)
		}
	}
	if asked["subagentRunId"] != writer || writer == "" {
		t.Errorf("approval_asked attributed to %v, want the writer %s", asked["subagentRunId"], writer)
	}
	if in := v["input"].(map[string]any); in["file_path"] != "hello.md" || in["content"] != "hello\n" {
		t.Errorf("input %v", in)
	}
	if o, _ := json.Marshal(v["options"]); string(o) != `["allow_once","allow_always","reject_once","reject_always"]` {
		t.Errorf("options %s", o)
	}
	if _, err := os.Stat(filepath.Join(ws, "hello.md")); err == nil {
		t.Fatal("the file was written before the answer")
	}
	id := v["id"].(string)

	list := listApprovals(t, url+"/approvals")
	if len(list) != 1 {
		t.Fatalf("GET /approvals %v", list)
	}
	entry := list[0].(map[string]any)
	if entry["threadId"] != "t-allow" || entry["runId"] != "run-t-allow" {
		t.Errorf("GET /approvals names thread %v run %v", entry["threadId"], entry["runId"])
	}
	delete(entry, "threadId")
	delete(entry, "runId")
	if a, b := mustMarshal(entry), mustMarshal(v); a != b {
		t.Errorf("GET /approvals entry %s\nstream value %s", a, b)
	}
	if l := listApprovals(t, url+"/approvals?threadId=another"); len(l) != 0 {
		t.Errorf("another thread's list %v", l)
	}

	for _, c := range []struct{ body, field string }{
		{`{}`, "reply"}, {`{"reply":"yes"}`, "reply"}, {`{"reply":true}`, "reply"},
		{`{"reply":"allow_once","extra":1}`, "extra"}, {`{"reply":"allow_once","message":3}`, "message"},
		{`[1]`, ""}, {`{"reply":"allow_once"} {}`, ""},
	} {
		code, body := replyTo(t, url, id, c.body)
		if f, _ := body["field"].(string); code != 400 || f != c.field || body["error"] == "" {
			t.Errorf("%s: %d %v, want 400 naming field %q", c.body, code, body, c.field)
		}
	}
	if a := servertest.Do(t, "POST", url+"/approvals/"+id, `{"reply":"allow_once"}`, "Content-Type", "text/plain"); a.Code != 415 {
		t.Errorf("text/plain: %d %s", a.Code, a.Body)
	}
	big := `{"reply":"reject_once","message":"` + strings.Repeat("x", maxReplyBytes) + `"}`
	if code, body := replyTo(t, url, id, big); code != 413 {
		t.Errorf("a body over %d bytes: %d %v", maxReplyBytes, code, body)
	}
	if code, body := replyTo(t, url, "per_unknown", `{"reply":"allow_once"}`); code != 404 || !strings.Contains(body["error"].(string), "per_unknown") {
		t.Errorf("unknown id: %d %v", code, body)
	}
	if a := servertest.Do(t, "GET", url+"/approvals/"+id, ""); a.Code != 405 || a.Header.Get("Allow") != "POST" {
		t.Errorf("GET /approvals/{id}: %d %v", a.Code, a.Header)
	}

	code, body := replyTo(t, url, id, `{"reply":"allow_once"}`)
	if code != 200 || body["id"] != id || body["reply"] != "allow_once" {
		t.Fatalf("reply: %d %v", code, body)
	}
	code, body = replyTo(t, url, id, `{"reply":"reject_once"}`)
	if code != 409 || !strings.Contains(body["error"].(string), "allow_once by agui") {
		t.Errorf("second reply: %d %v, want 409 saying how it was answered", code, body)
	}

	evs := run.rest()
	verifyStream(t, evs, rootOf(t, f.pool.Store(), "t-allow").ID)
	replied, result := -1, -1
	for i, e := range evs {
		switch {
		case custom(EventApprovalReplied)(e):
			replied = i
			rv := e["value"].(map[string]any)
			if rv["id"] != id || rv["reply"] != "allow_once" || rv["by"] != frontEnd || rv["sessionId"] != writer {
				t.Errorf("approval_replied %v", rv)
			}
		}
	}
	// The writer's Write is in its activity: its result comes after the
	// reply.
	if c := activityCall(t, evs, v["toolCallId"].(string)); c != nil {
		result = c["resultAt"].(int)
		if r, _ := c["result"].(string); !strings.HasPrefix(r, "Created ") || c["status"] != "completed" {
			t.Errorf("Write's result %q (%v)", r, c["status"])
		}
	}
	if replied < 0 || result < replied {
		t.Errorf("approval_replied at %d, the Write's result at %d", replied, result)
	}
	if last := evs[len(evs)-1]; last["type"] != wire.TypeRunFinished || last["result"] != "lead done" {
		t.Errorf("last event %v", last)
	}
	if got, err := os.ReadFile(filepath.Join(ws, "hello.md")); err != nil || string(got) != "hello\n" {
		t.Errorf("hello.md: %q %v", got, err)
	}
	if p := b.Pending(); len(p) != 0 {
		t.Errorf("still pending: %v", p)
	}
}

// A rejection with a message reaches the grandchild: its Write is not
// run, the tool's result tells the model why, and the writer's answer (its
// SUBAGENT_FINISHED) carries it up; the run goes on to its end.
func TestApprovalRejectReachesChild(t *testing.T) {
	servertest.NoLeaks(t)
	f := approvalServer(t)
	run := startRun(t, f.url, "t-reject")
	asked := run.until(custom(EventApprovalAsked))
	if asked == nil {
		t.Fatal("no approval_asked")
	}
	id := asked["value"].(map[string]any)["id"].(string)
	if code, body := replyTo(t, f.url, id, `{"reply":"reject_once","message":"write notes.md instead"}`); code != 200 {
		t.Fatalf("reject: %d %v", code, body)
	}
	evs := run.rest()
	verifyStream(t, evs, rootOf(t, f.pool.Store(), "t-reject").ID)
	const why = "rejected by the user in agui: write notes.md instead"
	writer := subagentNamed(evs, "writer")
	var sawResult, sawChild bool
	for _, e := range evs {
		switch {
		case custom(EventApprovalReplied)(e):
			if rv := e["value"].(map[string]any); rv["reply"] != "reject_once" || rv["message"] != "write notes.md instead" {
				t.Errorf("approval_replied %v", rv)
			}
		case e["type"] == wire.TypeSubagentFinished && e["subagentRunId"] == writer:
			sawChild = strings.Contains(e["result"].(string), why)
		}
	}
	if c := activityCall(t, evs, "Write"); c != nil {
		r, _ := c["result"].(string)
		sawResult = strings.Contains(r, why) && c["status"] == "failed"
	}
	if !sawResult || !sawChild {
		t.Errorf("the rejection in the Write's result: %v, in the writer's answer: %v", sawResult, sawChild)
	}
	if evs[len(evs)-1]["type"] != wire.TypeRunFinished {
		t.Errorf("last event %v", evs[len(evs)-1])
	}
	if _, err := os.Stat(filepath.Join(f.ws, "hello.md")); err == nil {
		t.Error("the rejected Write ran")
	}
}

// An answer from another front end is streamed as approval_replied naming
// it; a client that leaves cancels its run, which withdraws its request
// (a late answer then gets 409).
func TestApprovalAnsweredElsewhereAndWithdrawn(t *testing.T) {
	servertest.NoLeaks(t)
	f := approvalServer(t)
	run := startRun(t, f.url, "t-elsewhere")
	id := run.until(custom(EventApprovalAsked))["value"].(map[string]any)["id"].(string)
	if err := f.broker.Reply(id, approval.AllowOnce, "", "opencode"); err != nil {
		t.Fatal(err)
	}
	rv := run.until(custom(EventApprovalReplied))["value"].(map[string]any)
	if rv["id"] != id || rv["by"] != "opencode" || rv["reply"] != "allow_once" {
		t.Errorf("approval_replied %v", rv)
	}
	run.rest()

	withdrawn := make(chan approval.Notice, 1)
	stop := f.broker.Subscribe(func(n approval.Notice) {
		if n.Kind == approval.Cancelled {
			withdrawn <- n
		}
	})
	defer stop()
	gone := startRun(t, f.url, "t-gone")
	id = gone.until(custom(EventApprovalAsked))["value"].(map[string]any)["id"].(string)
	gone.cancel()
	select {
	case n := <-withdrawn:
		if n.Request.ID != id {
			t.Fatalf("withdrawn %s, want %s", n.Request.ID, id)
		}
	case <-time.After(servertest.WaitBound):
		t.Fatal("the request was not withdrawn when its client left")
	}
	if l := listApprovals(t, f.url+"/approvals"); len(l) != 0 {
		t.Errorf("GET /approvals after the client left: %v", l)
	}
	if code, body := replyTo(t, f.url, id, `{"reply":"allow_once"}`); code != 409 || !strings.Contains(body["error"].(string), "withdrawn") {
		t.Errorf("answer to a withdrawn request: %d %v", code, body)
	}
}

// Without a broker nothing is pending and answers get 404 (a bad body
// still 400); Close detaches a server from its broker.
func TestApprovalsWithoutBrokerAndClose(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.Pool(t, nestedYAML)
	_, ts := newServer(t, p, Options{})
	if l := listApprovals(t, ts.URL+"/approvals"); len(l) != 0 {
		t.Errorf("GET /approvals without a broker: %v", l)
	}
	if code, _ := replyTo(t, ts.URL, "per_x", `{"reply":"allow_once"}`); code != 404 {
		t.Errorf("answer without a broker: %d", code)
	}
	if code, _ := replyTo(t, ts.URL, "per_x", `{"reply":"sure"}`); code != 400 {
		t.Errorf("bad answer without a broker: %d", code)
	}

	b, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := New(p, Options{Approvals: b})
	if !b.Attached() {
		t.Fatal("New did not attach to the broker")
	}
	s.Close()
	s.Close()
	if b.Attached() {
		t.Error("Close left the server attached")
	}
}

// A request that no stream of this server shows (asked before any run
// streamed it, or by a run of another front end on the same broker) is
// still listed, from the broker and the store: no thread, and the parent
// of its session when the store has it.
func TestApprovalListsRequestsNoStreamShows(t *testing.T) {
	servertest.NoLeaks(t)
	f := approvalServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	asked := make(chan struct{})
	stop := f.broker.Subscribe(func(n approval.Notice) {
		if n.Kind == approval.Asked {
			close(asked)
		}
	})
	defer stop()
	done := make(chan error, 1)
	go func() {
		_, err := f.broker.Ask(ctx, approval.Request{SessionID: "ses_unstored", Agent: "writer", Tool: "Bash",
			Input: json.RawMessage(`{"command":"ls"}`), Rule: "a hook asks"})
		done <- err
	}()
	<-asked
	list := listApprovals(t, f.url+"/approvals")
	if len(list) != 1 {
		t.Fatalf("GET /approvals %v", list)
	}
	a := list[0].(map[string]any)
	if a["sessionId"] != "ses_unstored" || a["title"] != "Bash ls" || a["threadId"] != nil || a["parentSessionId"] != nil ||
		mustMarshal(a["input"]) != `{"command":"ls"}` || a["reason"] != "a hook asks" {
		t.Errorf("entry %v", a)
	}
	if l := listApprovals(t, f.url+"/approvals?threadId=t-any"); len(l) != 0 {
		t.Errorf("filtered by a thread: %v", l)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("Ask of a cancelled run returned no error")
	}
}
