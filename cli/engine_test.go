package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
	"github.com/agentpool/agentpool/internal/strictapi"
	"github.com/agentpool/agentpool/session"
)

// temporalManifests writes pool twice into dir: local.yaml runs in
// process, remote.yaml names the Temporal engine on addr.
func temporalManifests(t *testing.T, dir, addr, pool string) (local, remote string) {
	t.Helper()
	local, remote = filepath.Join(dir, "local.yaml"), filepath.Join(dir, "remote.yaml")
	queue := "q-" + strings.ToLower(strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
	if err := os.WriteFile(local, []byte(pool), 0o644); err != nil {
		t.Fatal(err)
	}
	x := fmt.Sprintf("execution: {engine: temporal, address: %q, task_queue: %s}\n", addr, queue)
	if err := os.WriteFile(remote, []byte(pool+x), 0o644); err != nil {
		t.Fatal(err)
	}
	return local, remote
}

// storedStream is what the store holds of session sid's tree, as the
// stream its consumer saw (`sessions events --tree --json`).
func storedStream(t *testing.T, dir, db, sid string) []event.Event {
	t.Helper()
	r := runCLI(t, dir, "sessions", "events", "--db", db, "--tree", "--json", sid)
	if r.code != 0 {
		t.Fatalf("sessions events %s: exit %d\n%s", sid, r.code, r.stderr)
	}
	return decodeJSONL(t, r.stdout)
}

// run --session on Temporal: the second run of a session is a new
// workflow run that gets the session's history (the provider sees the
// first turn in the second request), and its events follow the first
// run's in the log, each stored once.
func TestRunSessionOnTemporal(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes and dev server
	addr := devServer(t)
	dir := t.TempDir()
	srv := strictapi.OpenAI(t, "noted")
	pool := fmt.Sprintf("agents:\n  lead:\n    model: {type: openai, model: gpt-strict, base_url: %q, api_key: sk-test}\n", srv.URL+"/v1")
	local, remote := temporalManifests(t, dir, addr, pool)
	db := temporalDB(t, dir)
	werr := startWorker(t, remote, db)

	first := runCLI(t, dir, "run", "-c", remote, "--db", db, "--output", "jsonl", "remember the first prompt")
	if first.code != 0 {
		t.Fatalf("first run: exit %d\n%s\nworker: %s", first.code, first.stderr, werr.String())
	}
	a := decodeJSONL(t, first.stdout)
	sid := a[0].(event.RunStarted).SessionID
	second := runCLI(t, dir, "run", "-c", remote, "--db", db, "--output", "jsonl", "--session", sid, "and the second")
	if second.code != 0 {
		t.Fatalf("run --session on temporal: exit %d\n%s\nworker: %s", second.code, second.stderr, werr.String())
	}
	b := decodeJSONL(t, second.stdout)
	if got := b[0].(event.RunStarted).SessionID; got != sid {
		t.Fatalf("the second run ran session %s, want %s", got, sid)
	}
	if err := eventtest.CheckInvariants(sid, b); err != nil {
		t.Errorf("second run's stream: %v", err)
	}

	bodies := srv.Bodies()
	if len(bodies) != 2 {
		t.Fatalf("provider got %d requests, want 2", len(bodies))
	}
	msgs, _ := bodies[1]["messages"].([]any)
	text, _ := json.Marshal(msgs)
	if len(msgs) != 3 || !strings.Contains(string(text), "remember the first prompt") || !strings.Contains(string(text), "noted") {
		t.Errorf("the second request does not carry the first turn (want user, assistant, user): %s", text)
	}

	// The log holds both runs, each event once: what the two live streams
	// showed, in their order, and what the same two runs store in process.
	stored := storedStream(t, dir, db, sid)
	if got, want := kinds(sid, stored), kinds(sid, a)+kinds(sid, b); got != want {
		t.Errorf("stored log differs from the live streams:\nstored: %s\nlive:   %s", got, want)
	}
	ldb := filepath.Join(dir, "local.db")
	lfirst := runCLI(t, dir, "run", "-c", local, "--db", ldb, "--output", "jsonl", "remember the first prompt")
	lsid := decodeJSONL(t, lfirst.stdout)[0].(event.RunStarted).SessionID
	if r := runCLI(t, dir, "run", "-c", local, "--db", ldb, "--output", "jsonl", "--session", lsid, "and the second"); r.code != 0 {
		t.Fatalf("in process run --session: exit %d\n%s", r.code, r.stderr)
	}
	if got, want := kinds(sid, stored), kinds(lsid, storedStream(t, dir, ldb, lsid)); got != want {
		t.Errorf("stored logs differ:\ntemporal:   %s\nin process: %s", got, want)
	}
}

// serveAGUIRun posts one run of thread to an AG-UI server and returns what
// it streamed that does not depend on timing: the types of its events, a
// run of deltas of one message, tool call or activity list counted once,
// and the text of each such run. The server's queue joins the deltas its
// writer has not taken yet (server/agui, Delivery), so how many events
// carry a text depends on when the writer ran; the text does not.
func serveAGUIRun(t *testing.T, base, path, thread, prompt string) (types, texts []string) {
	t.Helper()
	body := fmt.Sprintf(`{"threadId":%q,"runId":"r-%d","messages":[{"id":"m-%d","role":"user","content":%q}]}`, thread, time.Now().UnixNano(), time.Now().UnixNano(), prompt)
	res, err := http.Post("http://"+base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("POST %s: %d %s", path, res.StatusCode, b)
	}
	lastDelta := "" // the key of the delta run the last event continued
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e aguiEvent
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("SSE data %q: %v", data, err)
		}
		key, text, ok := e.delta()
		switch {
		case !ok:
			types = append(types, e.Type)
			lastDelta = ""
		case key == lastDelta:
			texts[len(texts)-1] += text
		default:
			types = append(types, e.Type)
			texts = append(texts, text)
			lastDelta = key
		}
	}
	return types, texts
}

// aguiEvent is what serveAGUIRun reads of an AG-UI event.
type aguiEvent struct {
	Type          string `json:"type"`
	MessageID     string `json:"messageId"`
	ToolCallID    string `json:"toolCallId"`
	SubagentRunID string `json:"subagentRunId"`
	Delta         string `json:"delta"`
	Patch         []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	} `json:"patch"`
}

// delta reports whether e is a fragment the server's queue may join to the
// one before it (a text, reasoning or argument delta; an append of text to
// a list of a subagent's activity), with the key of what it belongs to and
// its text.
func (e aguiEvent) delta() (key, text string, ok bool) {
	switch e.Type {
	case "TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS":
		return e.Type + "/" + e.MessageID + "/" + e.ToolCallID + "/" + e.SubagentRunID, e.Delta, true
	case "ACTIVITY_DELTA":
		if len(e.Patch) != 1 || e.Patch[0].Op != "add" || !strings.HasSuffix(e.Patch[0].Path, "/-") {
			return "", "", false
		}
		s, isText := e.Patch[0].Value.(string)
		return e.Type + "/" + e.MessageID + "/" + e.Patch[0].Path, s, isText
	}
	return "", "", false
}

// serve agui on Temporal: a thread's runs (the first and a follow-up on
// the same session) stream what the same server streams in process, and
// the store holds each event once.
func TestServeAGUIOnTemporal(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes and dev server
	addr := devServer(t)
	dir := t.TempDir()
	slow := "  slow: {model: {type: scripted, delay: 100ms, turns: [{text: \"" + strings.Repeat("word ", 600) + "\"}]}}\n"
	local, remote := temporalManifests(t, dir, addr, temporalPool+slow)
	db := temporalDB(t, dir)
	werr := startWorker(t, remote, db)
	ldb := filepath.Join(dir, "local.db")
	onTemporal := startHTTPServer(t, "agui", "-c", remote, "--db", db)
	inProcess := startHTTPServer(t, "agui", "-c", local, "--db", ldb)

	thread, lthread := id.Descending(id.Session), id.Descending(id.Session)
	for _, prompt := range []string{"go", "again"} {
		got, gotTexts := serveAGUIRun(t, onTemporal, "/", thread, prompt)
		want, wantTexts := serveAGUIRun(t, inProcess, "/", lthread, prompt)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("prompt %q streams differ:\ntemporal:   %v\nin process: %v\nworker: %s", prompt, got, want, werr.String())
		}
		if !slices.Equal(gotTexts, wantTexts) {
			t.Errorf("prompt %q streams' texts differ:\ntemporal:   %q\nin process: %q", prompt, gotTexts, wantTexts)
		}
		if len(got) == 0 || got[len(got)-1] != "RUN_FINISHED" {
			t.Errorf("prompt %q: the run did not finish: %v", prompt, got)
		}
	}
	sameStoredRun(t, dir, db, thread, ldb, lthread)

	// A client that goes away cancels its run: the workflow is cancelled
	// and the session ends aborted.
	gone := id.Descending(id.Session)
	body := fmt.Sprintf(`{"threadId":%q,"runId":"r-gone","messages":[{"id":"m1","role":"user","content":"talk"}]}`, gone)
	res, err := http.Post("http://"+onTemporal+"/agents/slow", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "RUN_STARTED") {
	}
	res.Body.Close()
	var status session.Status
	if !waitStored(t, db, 30*time.Second, func(st session.Store) bool {
		s, err := st.GetSession(context.Background(), gone)
		if err != nil {
			t.Fatal(err)
		}
		status = s.Status
		return status == session.StatusAborted
	}) {
		t.Fatalf("session of the client that went away: %s, want aborted\nworker: %s", status, werr.String())
	}
}

// waitStored reports whether done held within bound for the store db,
// opened once (opening it writes to it), asking at first and again at
// each notice (inotify) of a write to the SQLite file (the database and
// its WAL) by another process. A PostgreSQL store notifies appends only,
// and a session's final status is written after its last events: there
// it looks again every 100ms, the one wait with no notice.
func waitStored(t *testing.T, db string, bound time.Duration, done func(session.Store) bool) bool {
	t.Helper()
	st, _, err := openPoolStore(db, &config.Manifest{}, fullTestExtensions().Postgres)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !strings.Contains(db, "://") && !strings.Contains(db, "=") {
		return proctreetest.WaitDir(filepath.Dir(db), bound, func() bool { return done(st) })
	}
	for deadline := time.Now().Add(bound); !done(st); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// acpProc is a `serve acp` process the test talks JSON-RPC to.
type acpProc struct {
	t      *testing.T
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuf
}

func startACP(t *testing.T, dir string, args ...string) *acpProc {
	t.Helper()
	cmd := exec.Command(cliBinary(t), append([]string{"serve", "acp"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &acpProc{t: t, in: stdin, out: bufio.NewReader(stdout), stderr: &lockedBuf{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close() // the server exits when stdin ends
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("serve acp: %v\n%s", err, c.stderr.String())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Error("serve acp did not exit when its stdin ended")
		}
	})
	return c
}

func (c *acpProc) send(s string) {
	c.t.Helper()
	if _, err := c.in.Write([]byte(s + "\n")); err != nil {
		c.t.Fatal(err)
	}
}

// until reads lines up to the one that holds want and returns them.
func (c *acpProc) until(want string) []string {
	c.t.Helper()
	var lines []string
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			c.t.Fatalf("stdout ended waiting for %s: %v\nstderr: %s", want, err, c.stderr.String())
		}
		lines = append(lines, line)
		if strings.Contains(line, want) {
			return lines
		}
	}
}

// session opens an ACP session and returns its id.
func (c *acpProc) session(dir string) string {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	c.until(`"id":1`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"` + dir + `","mcpServers":[]}}`)
	var created struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	lines := c.until(`"id":2`)
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &created); err != nil || created.Result.SessionID == "" {
		c.t.Fatalf("session/new: %v %+v", err, created)
	}
	return created.Result.SessionID
}

// prompt sends a prompt and returns the kinds of the session updates it
// got, then the stop reason.
func (c *acpProc) prompt(n int, sid, text string) []string {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, n, sid, text))
	var kinds []string
	for _, line := range c.until(fmt.Sprintf(`"id":%d,`, n)) {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Update struct {
					Kind string `json:"sessionUpdate"`
				} `json:"update"`
			} `json:"params"`
			Result struct {
				StopReason string `json:"stopReason"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			c.t.Fatalf("%q: %v", line, err)
		}
		switch {
		case m.Method == "session/update":
			kinds = append(kinds, m.Params.Update.Kind)
		case m.Result.StopReason != "":
			kinds = append(kinds, "stop:"+m.Result.StopReason)
		}
	}
	return kinds
}

// serve acp on Temporal: a session's prompts (the first and a follow-up)
// get the updates and stop reason they get in process, and the store
// holds each event once.
func TestServeACPOnTemporal(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes and dev server
	addr := devServer(t)
	dir := t.TempDir()
	local, remote := temporalManifests(t, dir, addr, temporalPool)
	db := temporalDB(t, dir)
	werr := startWorker(t, remote, db)
	ldb := filepath.Join(dir, "local.db")

	onTemporal := startACP(t, dir, "-c", remote, "--db", db)
	inProcess := startACP(t, dir, "-c", local, "--db", ldb)
	sid, lsid := onTemporal.session(dir), inProcess.session(dir)
	for i, prompt := range []string{"go", "again"} {
		got, want := onTemporal.prompt(10+i, sid, prompt), inProcess.prompt(10+i, lsid, prompt)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("prompt %q updates differ:\ntemporal:   %v\nin process: %v\nworker: %s", prompt, got, want, werr.String())
		}
		if len(got) == 0 || got[len(got)-1] != "stop:end_turn" {
			t.Errorf("prompt %q: %v", prompt, got)
		}
	}
	sameStoredRun(t, dir, db, sid, ldb, lsid)
}

// openCodeEvents subscribes to an OpenCode server's /event stream and
// returns the types of its events as they come (heartbeats left out).
func openCodeEvents(t *testing.T, base string) <-chan string {
	t.Helper()
	res, err := http.Get("http://" + base + "/event")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	types := make(chan string, 4096)
	go func() {
		defer close(types)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var e struct {
				Type string `json:"type"`
			}
			if json.Unmarshal([]byte(data), &e) == nil && e.Type != "server.heartbeat" && e.Type != "server.connected" {
				types <- e.Type
			}
		}
	}()
	return types
}

// openCodePrompt creates a session when sid is empty, prompts it and
// returns its id, the answer's text parts and the /event types up to the
// session's idle.
func openCodePrompt(t *testing.T, base string, events <-chan string, sid, text string) (string, string, []string) {
	t.Helper()
	post := func(path, body string) []byte {
		res, err := http.Post("http://"+base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, res.StatusCode, b)
		}
		return b
	}
	if sid == "" {
		var s struct{ ID string }
		if err := json.Unmarshal(post("/session", `{}`), &s); err != nil || s.ID == "" {
			t.Fatalf("create session: %v", err)
		}
		sid = s.ID
	}
	answer := string(post("/session/"+sid+"/message", fmt.Sprintf(`{"parts":[{"type":"text","text":%q}]}`, text)))
	var types []string
	for {
		select {
		case ty, ok := <-events:
			if !ok {
				t.Fatalf("/event ended: %v", types)
			}
			types = append(types, ty)
			if ty == "session.idle" {
				return sid, answer, types
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no session.idle on /event: %v", types)
		}
	}
}

// serve opencode on Temporal: the projection the OpenCode API and the web
// view show (processor watchers) sees the runs as in process: the same
// /event stream and answer for a prompt and a follow-up, and the store
// holds each event once.
func TestServeOpenCodeOnTemporal(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes and dev server
	addr := devServer(t)
	dir := t.TempDir()
	local, remote := temporalManifests(t, dir, addr, temporalPool)
	db := temporalDB(t, dir)
	werr := startWorker(t, remote, db)
	ldb := filepath.Join(dir, "local.db")
	onTemporal := startHTTPServer(t, "opencode", "-c", remote, "--db", db)
	inProcess := startHTTPServer(t, "opencode", "-c", local, "--db", ldb)
	tev, lev := openCodeEvents(t, onTemporal), openCodeEvents(t, inProcess)

	var sid, lsid string
	for _, prompt := range []string{"go", "again"} {
		var answer string
		var got, want []string
		sid, answer, got = openCodePrompt(t, onTemporal, tev, sid, prompt)
		lsid, _, want = openCodePrompt(t, inProcess, lev, lsid, prompt)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("prompt %q: /event differs:\ntemporal:   %v\nin process: %v\nworker: %s", prompt, got, want, werr.String())
		}
		if !strings.Contains(answer, "lead done") {
			t.Errorf("prompt %q: answer %s", prompt, answer)
		}
	}
	sameStoredRun(t, dir, db, sid, ldb, lsid)
}

// engineOf is the engine the stored session sid names (session.MetaEngine).
func engineOf(t *testing.T, db, sid string) string {
	t.Helper()
	e, _ := storedSession(t, db, sid).Metadata[session.MetaEngine].(string)
	return e
}

// storedSession reads session sid's record from db.
func storedSession(t *testing.T, db, sid string) session.Session {
	t.Helper()
	st, _, err := openPoolStore(db, &config.Manifest{}, fullTestExtensions().Postgres)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := st.GetSession(context.Background(), sid)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameStoredRun checks that session sid of store db, run on Temporal, has
// the stored log of session lsid of store ldb, run in process, and is
// marked as the engine's.
func sameStoredRun(t *testing.T, dir, db, sid, ldb, lsid string) {
	t.Helper()
	if got, want := kinds(sid, storedStream(t, dir, db, sid)), kinds(lsid, storedStream(t, dir, ldb, lsid)); got != want {
		t.Errorf("stored logs differ:\ntemporal:   %s\nin process: %s", got, want)
	}
	if e := engineOf(t, db, sid); e != "temporal" {
		t.Errorf("session %s's engine: %q", sid, e)
	}
}

// TestRunBudgetFlagsOnTemporal: the run's budget flags are refused with a
// manifest on the Temporal engine, which would spend past them without a
// word, and an agent's budget there is a warning of validate.
func TestRunBudgetFlagsOnTemporal(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes and dev server
	addr := devServer(t)
	dir := t.TempDir()
	pool := "agents:\n  lead:\n    model: {type: test}\n    budget: {tokens: 1000}\n"
	_, remote := temporalManifests(t, dir, addr, pool)
	db := temporalDB(t, dir)
	for _, flag := range []string{"--max-tokens=100", "--max-cost=0.5"} {
		r := runCLI(t, dir, "run", "-c", remote, "--db", db, flag, "hi")
		if r.code != 1 || !strings.Contains(r.stderr, "not enforced with execution.engine: temporal") {
			t.Errorf("run %s on temporal: exit %d, stderr:\n%s", flag, r.code, r.stderr)
		}
	}
	v := runCLI(t, dir, "validate", remote)
	if !strings.Contains(v.stdout+v.stderr, "agents.lead.budget") || !strings.Contains(v.stdout+v.stderr, "not enforced with execution.engine: temporal") {
		t.Errorf("validate names no budget warning: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}
