package agui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/server/internal/servertest"

	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
)

// nestedYAML mirrors the spec's AgentPool-style example: planner -> task
// -> parallel team -> searcher -> worker summarizer (depth 3).
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
    model:
      type: scripted
      turns:
        - {thinking: "Is it right? ", text: "Looks right."}
teams:
  research_team:
    description: Searches and criticizes.
    mode: parallel
    members: [searcher, critic]
`

// slowYAML: boss delegates to a slow child; failing agents for errors.
const slowYAML = `
default_agent: boss
agents:
  boss:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: slow, prompt: "work", description: "slow work"}}]
        - text: "done"
    tools: [{type: subagent}]
  slow:
    model:
      type: scripted
      delay: 20ms
      turns:
        - text: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"
  broken:
    model: {type: scripted, turns: [{text: "partial ", error: "upstream exploded"}]}
  delegator:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: broken, prompt: "try", description: "doomed"}}]
        - text: "recovered"
    tools: [{type: subagent}]
`

func newServer(t *testing.T, p *pool.Pool, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	s := New(p, opts)
	return s, servertest.Serve(t, s)
}

func runBody(thread, prompt string) string {
	b, _ := json.Marshal(map[string]any{
		"threadId": thread, "runId": "run-" + thread, "state": map[string]any{"k": "v"},
		"messages": []any{map[string]any{"id": "m1", "role": "user", "content": prompt}},
	})
	return string(b)
}

// post posts an AG-UI run body, asking for an event stream.
func post(t *testing.T, url, body string) servertest.Answer {
	t.Helper()
	return servertest.PostJSON(t, url, body, "Accept", "text/event-stream")
}

func runOK(t *testing.T, url, body string) []ev {
	t.Helper()
	a := post(t, url, body)
	if a.Code != 200 || !strings.HasPrefix(a.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %s: %s", a.Code, a.Header.Get("Content-Type"), a.Body)
	}
	return parseSSE(t, []byte(a.Body))
}

// rootOf finds the root session of a thread.
func rootOf(t *testing.T, st session.Store, thread string) session.Session {
	t.Helper()
	roots, err := st.ListSessions(context.Background(), session.ListOptions{RootsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var found []session.Session
	for _, s := range roots {
		if s.ID == thread || s.Metadata[MetadataThreadKey] == thread {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("thread %s has %d root sessions", thread, len(found))
	}
	return found[0]
}

func TestNestedRunMapping(t *testing.T) {
	p := servertest.Pool(t, nestedYAML)
	_, ts := newServer(t, p, Options{})
	evs := runOK(t, ts.URL+"/", runBody("thread-nested", "Research the Go scheduler."))
	rootSess := rootOf(t, p.Store(), "thread-nested")
	started := verifyStream(t, evs, rootSess.ID)

	if got := evs[len(evs)-1]; got["type"] != wire.TypeRunFinished || got["result"] != "Plan complete." || got["threadId"] != "thread-nested" {
		t.Fatalf("last event %v", got)
	}
	if evs[1]["type"] != wire.TypeStateSnapshot || fmt.Sprint(evs[1]["snapshot"]) != "map[k:v]" {
		t.Fatalf("second event %v, want the input state snapshot", evs[1])
	}
	// Subagents are the stored child sessions, with their tree.
	tree, err := session.Subtree(context.Background(), p.Store(), rootSess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(started) != len(tree)-1 || len(started) != 4 {
		t.Fatalf("%d subagents for %d stored children (want 4)", len(started), len(tree)-1)
	}
	nested := 0
	for _, s := range tree[1:] {
		e := started[s.ID]
		if e == nil {
			t.Fatalf("child session %s (%s) has no SUBAGENT_STARTED", s.ID, s.AgentName)
		}
		if e["name"] != s.AgentName {
			t.Errorf("subagent %s named %v, want %s", s.ID, e["name"], s.AgentName)
		}
		parent, _ := e["parentSubagentRunId"].(string)
		switch {
		case s.ParentID == rootSess.ID && parent != "":
			t.Errorf("top-level child %s has parentSubagentRunId %s", s.ID, parent)
		case s.ParentID != rootSess.ID && parent != s.ParentID:
			t.Errorf("child %s: parentSubagentRunId %q, want %s", s.ID, parent, s.ParentID)
		case s.ParentID != rootSess.ID:
			nested++
		}
	}
	if nested != 3 {
		t.Errorf("%d nested subagents, want 3 (team members and the worker)", nested)
	}
	// Every event of a child carries its id; the worker's spawn names its
	// tool call; the critic's thinking is a reasoning span.
	var sawReasoning, sawWorkerCall bool
	acts := activities(t, evs)
	for _, a := range acts {
		for _, m := range a["messages"].([]any) {
			if m := m.(map[string]any); m["role"] == "reasoning" && pieces(t, m["content"]) != "" {
				sawReasoning = true
			}
		}
	}
	for _, e := range evs {
		switch e["type"] {
		case wire.TypeTextMessageStart, wire.TypeToolCallStart, wire.TypeToolCallResult, wire.TypeReasoningMessageStart:
			// A child's content is in its activity, not in the run's
			// messages.
			if e["subagentRunId"] != nil {
				t.Errorf("%s of subagent %v: a message of the run", e["type"], e["subagentRunId"])
			}
		case wire.TypeSubagentStarted:
			if e["name"] == "summarizer" && e["parentToolCallId"] != nil {
				sawWorkerCall = true
			}
		}
	}
	if !sawReasoning || !sawWorkerCall {
		t.Errorf("reasoning in a child: %v; worker spawn names its tool call: %v", sawReasoning, sawWorkerCall)
	}
	// A delegating tool's result reads as the child's answer, not as the
	// JSON the model gets; the child session is in the metadata.
	delegations := 0
	results := []map[string]any{}
	for _, e := range evs {
		if e["type"] == wire.TypeToolCallResult {
			results = append(results, e)
		}
	}
	for _, a := range acts {
		for _, c := range a["toolCalls"].([]any) {
			if c := c.(map[string]any); c["result"] != nil {
				results = append(results, map[string]any{"content": c["result"], "metadata": c["metadata"]})
			}
		}
	}
	for _, e := range results {
		md, _ := e["metadata"].(map[string]any)
		ap, _ := md[MetadataKey].(map[string]any)
		if ap["child_session_id"] == nil {
			continue
		}
		delegations++
		if c, _ := e["content"].(string); strings.HasPrefix(strings.TrimSpace(c), "{") || c == "" {
			t.Errorf("delegation result content %q, want the child's answer", c)
		}
	}
	if delegations < 2 {
		t.Errorf("%d delegation results with a child session in their metadata, want the task and the worker's", delegations)
	}
}

func TestErrorsMapping(t *testing.T) {
	p := servertest.Pool(t, slowYAML)
	_, ts := newServer(t, p, Options{})

	// A failing root: RUN_ERROR, last, with everything closed before it.
	evs := runOK(t, ts.URL+"/agents/broken", runBody("thread-broken", "go"))
	verifyStream(t, evs, "")
	last := evs[len(evs)-1]
	if last["type"] != wire.TypeRunError || !strings.Contains(fmt.Sprint(last["message"]), "upstream exploded") || last["code"] != "model_error" {
		t.Fatalf("last event %v, want RUN_ERROR", last)
	}
	if s := rootOf(t, p.Store(), "thread-broken"); s.Status != session.StatusError {
		t.Errorf("root status %s, want error", s.Status)
	}

	// A failing child: SUBAGENT_ERROR, and the run goes on to RUN_FINISHED.
	evs = runOK(t, ts.URL+"/agents/delegator", runBody("thread-delegator", "go"))
	verifyStream(t, evs, "")
	var subErr ev
	for _, e := range evs {
		if e["type"] == wire.TypeSubagentError {
			subErr = e
		}
	}
	if subErr == nil || !strings.Contains(fmt.Sprint(subErr["message"]), "upstream exploded") {
		t.Fatalf("no SUBAGENT_ERROR with the child's error: %v", subErr)
	}
	if last := evs[len(evs)-1]; last["type"] != wire.TypeRunFinished || last["result"] != "recovered" {
		t.Fatalf("last event %v", last)
	}
}

// TestDisconnectCancelsRun: a client that goes away cancels its run; the
// child ends aborted, as stored.
func TestDisconnectCancelsRun(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.Pool(t, slowYAML)
	_, ts := newServer(t, p, Options{})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/", strings.NewReader(runBody("thread-gone", "go")))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Read until the slow child has produced some text, then hang up.
	sc := bufio.NewScanner(resp.Body)
	var childID string
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, wire.TypeSubagentStarted) {
			var e struct{ SubagentRunID string }
			json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e)
			childID = e.SubagentRunID
		}
		// The child's text arrives in its activity message.
		if childID != "" && strings.Contains(line, wire.TypeActivityDelta) && strings.Contains(line, `/content/-"`) {
			break
		}
	}
	if childID == "" {
		t.Fatal("no subagent started")
	}
	cancel()
	resp.Body.Close()

	// Close waits for the handler, and the handler for the run it
	// cancelled (it returns once RunSink has): no poll of the store.
	ts.Close()

	st := p.Store()
	rootID := rootOf(t, st, "thread-gone").ID
	r, err1 := st.GetSession(context.Background(), rootID)
	c, err2 := st.GetSession(context.Background(), childID)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if r.Status != session.StatusAborted || c.Status != session.StatusAborted {
		t.Errorf("root %s, child %s: want both aborted", r.Status, c.Status)
	}
	if c.ParentID != rootID {
		t.Errorf("child parent %s, want %s", c.ParentID, rootID)
	}
	if p.Runtime().Running(rootID) || p.Runtime().Running(childID) {
		t.Error("sessions still registered as running")
	}
}

func TestThreads(t *testing.T) {
	p := servertest.Pool(t, slowYAML)
	_, ts := newServer(t, p, Options{})
	st := p.Store()
	ctx := context.Background()

	// A client thread id (not a session id) maps to one root session that
	// later runs continue.
	runOK(t, ts.URL+"/agents/broken", runBody("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "first"))
	s1 := rootOf(t, st, "3f2504e0-4f89-11d3-9a0c-0305e82c3301")
	n1, _ := st.Messages(ctx, s1.ID)
	runOK(t, ts.URL+"/agents/broken", runBody("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "second"))
	s2 := rootOf(t, st, "3f2504e0-4f89-11d3-9a0c-0305e82c3301")
	n2, _ := st.Messages(ctx, s2.ID)
	if s1.ID != s2.ID || len(n2) <= len(n1) {
		t.Fatalf("second run: session %s -> %s, messages %d -> %d", s1.ID, s2.ID, len(n1), len(n2))
	}
	if s2.ID == "3f2504e0-4f89-11d3-9a0c-0305e82c3301" || !validSessionID(s2.ID) {
		t.Fatalf("mapped session id %q", s2.ID)
	}

	// After a restart (a new server on the same store) the mapping is
	// found in the session metadata.
	_, ts2 := newServer(t, p, Options{})
	runOK(t, ts2.URL+"/agents/broken", runBody("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "third"))
	if s3 := rootOf(t, st, "3f2504e0-4f89-11d3-9a0c-0305e82c3301"); s3.ID != s1.ID {
		t.Fatalf("after restart: session %s, want %s", s3.ID, s1.ID)
	}

	// A thread id that is a session id is the session id.
	sid := id.Descending(id.Session)
	evs := runOK(t, ts.URL+"/agents/broken", runBody(sid, "direct"))
	if evs[0]["threadId"] != sid {
		t.Fatalf("threadId %v", evs[0]["threadId"])
	}
	if s, err := st.GetSession(ctx, sid); err != nil || s.ParentID != "" {
		t.Fatalf("session %s: %v %+v", sid, err, s)
	}

	// A child session is no thread.
	evs = runOK(t, ts.URL+"/agents/delegator", runBody("thread-parent", "go"))
	var childID string
	for _, e := range evs {
		if e["type"] == wire.TypeSubagentStarted {
			childID = e["subagentRunId"].(string)
		}
	}
	a := post(t, ts.URL+"/", runBody(childID, "go"))
	if a.Code != http.StatusBadRequest || !strings.Contains(a.Body, "child session") {
		t.Fatalf("child session as thread: %d %s", a.Code, a.Body)
	}
}

func TestBusyThread(t *testing.T) {
	p := servertest.Pool(t, slowYAML)
	_, ts := newServer(t, p, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/", strings.NewReader(runBody("thread-busy", "go")))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), wire.TypeSubagentStarted) {
	}
	a := post(t, ts.URL+"/", runBody("thread-busy", "again"))
	if a.Code != http.StatusConflict || !strings.Contains(a.Body, `"error"`) {
		t.Fatalf("second run on a busy thread: %d %s", a.Code, a.Body)
	}
	cancel()
}

func TestBadRequests(t *testing.T) {
	p := servertest.Pool(t, nestedYAML)
	_, ts := newServer(t, p, Options{MaxBodyBytes: 1 << 10})
	good := runBody("thread-ok", "hi")
	for _, tc := range []struct {
		name, method, path, ctype, body string
		want                            int
	}{
		{"malformed JSON", "POST", "/", "application/json", `{"threadId": "t",`, 400},
		{"not an object", "POST", "/", "application/json", `["x"]`, 400},
		{"empty body", "POST", "/", "application/json", ``, 400},
		{"trailing garbage", "POST", "/", "application/json", good + `}`, 400},
		{"wrong content type", "POST", "/", "text/plain", good, 415},
		{"no content type", "POST", "/", "", good, 415},
		{"unknown agent", "POST", "/agents/nobody", "application/json", good, 404},
		{"missing threadId", "POST", "/", "application/json", `{"runId":"r","messages":[]}`, 400},
		{"missing runId", "POST", "/", "application/json", `{"threadId":"t","messages":[]}`, 400},
		{"missing messages", "POST", "/", "application/json", `{"threadId":"t","runId":"r"}`, 400},
		{"null messages", "POST", "/", "application/json", `{"threadId":"t","runId":"r","messages":null}`, 400},
		{"wrong field type", "POST", "/", "application/json", `{"threadId":1,"runId":"r","messages":[]}`, 400},
		{"empty threadId", "POST", "/", "application/json", `{"threadId":"","runId":"r","messages":[{"id":"1","role":"user","content":"x"}]}`, 400},
		{"no user message", "POST", "/", "application/json", `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"assistant","content":"x"}]}`, 400},
		{"bad content", "POST", "/", "application/json", `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":5}]}`, 400},
		{"empty content", "POST", "/", "application/json", `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":[{"type":"image","source":{"type":"url","value":"u"}}]}]}`, 400},
		{"too large", "POST", "/", "application/json", `{"threadId":"t","runId":"r","messages":[],"pad":"` + strings.Repeat("x", 2<<10) + `"}`, 413},
		{"GET run", "GET", "/", "", "", 405},
		{"POST agents", "POST", "/agents", "application/json", good, 405},
		{"unknown path", "GET", "/nope", "", "", 404},
	} {
		req, _ := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body struct{ Error string }
		if resp.StatusCode != tc.want || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			json.Unmarshal(b, &body) != nil || body.Error == "" {
			t.Errorf("%s: %d %s %s, want %d with a JSON error", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), b, tc.want)
		}
	}
	// Still serving.
	evs := runOK(t, ts.URL+"/", good)
	verifyStream(t, evs, "")
	// content parts: the text parts are the prompt
	evs = runOK(t, ts.URL+"/agents/summarizer", `{"threadId":"t-parts","runId":"r","messages":[{"id":"1","role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`)
	verifyStream(t, evs, "")
	msgs, _ := p.Store().Messages(context.Background(), rootOf(t, p.Store(), "t-parts").ID)
	if len(msgs) == 0 || msgs[0].Text() != "a\nb" {
		t.Errorf("prompt from content parts: %+v", msgs)
	}
}

func TestAgentsAndHealth(t *testing.T) {
	p := servertest.Pool(t, nestedYAML)
	_, ts := newServer(t, p, Options{})
	resp, err := http.Get(ts.URL + "/agents")
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Agents []wire.AgentInfo }
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	got := fmt.Sprint(list.Agents)
	want := "[{planner Splits the job and hands it out. agent true} {searcher  agent false} {summarizer  agent false} {critic  agent false} {research_team Searches and criticizes. team_parallel false}]"
	if got != want {
		t.Errorf("agents:\n got %s\nwant %s", got, want)
	}
	resp, err = http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz: %d", resp.StatusCode)
	}
}

// TestShutdownEndsStreams: a server shutting down cancels its runs and
// still ends each stream properly (RUN_FINISHED, outcome cancelled).
func TestShutdownEndsStreams(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.Pool(t, slowYAML)
	s := New(p, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/", strings.NewReader(runBody("thread-shutdown", "go")))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var got []byte
	// Until the child's text (in its activity message) arrives.
	for !strings.Contains(string(got), `/content/-"`) {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line...)
	}
	stop()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	evs := parseSSE(t, append(got, rest...))
	verifyStream(t, evs, "")
	last := evs[len(evs)-1]
	if last["type"] != wire.TypeRunFinished || fmt.Sprint(last["outcome"]) != "map[type:cancelled]" {
		t.Fatalf("last event %v, want RUN_FINISHED cancelled", last)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
