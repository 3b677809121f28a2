package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/internal/pgtest"
	"github.com/agentpool/agentpool/session"
)

// deepApprovalManifest: the lead asks mid, which asks the writer, whose
// Write asks for approval: a grandchild's request. Every model is the
// test model, whose answer is the results of the tools it called, so the
// root's final message carries what happened to the Write up the tree.
const deepApprovalManifest = `
default_agent: lead
agents:
  lead:
    tools: [subagent]
    model: {type: test, call_tools: [task], tool_args: {task: {agent_or_team: mid, prompt: Have the note written.}}}
  mid:
    tools: [subagent]
    model: {type: test, call_tools: [task], tool_args: {task: {agent_or_team: writer, prompt: Write notes.md.}}}
  writer:
    tools: [file_access]
    model: {type: test, call_tools: [Write], tool_args: {Write: {file_path: notes.md, content: "approved\n"}}}
`

// serveProc is an `agentpool serve` process a test kills or stops.
type serveProc struct {
	cmd  *exec.Cmd
	base string      // http://host:port
	logs chan string // its stderr lines
}

// startServe starts `agentpool serve SERVER` in dir over database db
// (with flags), on a free loopback port, and waits for its "listening" line; the cleanup
// kills it if the test did not.
func startServe(t *testing.T, dir, server, db string, flags ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(cliBinary(t), append([]string{"serve", server, "--db", db, "--addr", "127.0.0.1:0", "-c", "agentpool.yaml"}, flags...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "HOME="+filepath.Join(dir, "home"), "AGENTPOOL_SERVER_TOKEN=")
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, logs: make(chan string, 4096)}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	go func() {
		defer close(p.logs)
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			select {
			case p.logs <- sc.Text():
			default: // a test that stopped reading loses nothing it waits for
			}
		}
	}()
	re := regexp.MustCompile(server + ` listening on (http://\S+)`)
	p.base = p.await(t, func(line string) bool { return re.MatchString(line) }, "listening")
	p.base = re.FindStringSubmatch(p.base)[1]
	return p
}

// await returns the first stderr line match accepts; the process's end
// fails the test, and so does a minute without it.
func (p *serveProc) await(t *testing.T, match func(string) bool, what string) string {
	t.Helper()
	guard := time.NewTimer(time.Minute)
	defer guard.Stop()
	var seen []string
	for {
		select {
		case line, ok := <-p.logs:
			if !ok {
				t.Fatalf("serve ended before %s:\n%s", what, strings.Join(seen, "\n"))
			}
			if match(line) {
				return line
			}
			seen = append(seen, line)
		case <-guard.C:
			t.Fatalf("serve did not log %s within a minute:\n%s", what, strings.Join(seen, "\n"))
		}
	}
}

// kill ends the process with SIGKILL: nothing of it runs after.
func (p *serveProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
}

// call makes an HTTP request to the server and checks its status.
func (p *serveProc) call(t *testing.T, method, path, body string, want int) []byte {
	t.Helper()
	req, err := http.NewRequest(method, p.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, b, want)
	}
	return b
}

// askedRequest is a request as GET /permission lists it.
type askedRequest struct {
	ID, SessionID string
	Metadata      map[string]any
}

// waitingRun starts the deep approval run in a web server over db and
// returns the server, the root session and the grandchild's request, which
// waits. With earlier, a first run of the root ("first"), allowed, ends
// before (and the note it wrote is removed).
func waitingRun(t *testing.T, dir, db string, earlier bool) (*serveProc, string, askedRequest) {
	t.Helper()
	srv := startServe(t, dir, "web", db)
	events := webEvents(t, srv.base)
	var root struct{ ID string }
	if err := json.Unmarshal(srv.call(t, "POST", "/session", `{}`, 200), &root); err != nil || root.ID == "" {
		t.Fatalf("create session: %v", err)
	}
	if earlier {
		srv.call(t, "POST", "/session/"+root.ID+"/prompt_async", `{"agent":"lead","parts":[{"type":"text","text":"first"}]}`, 204)
		until(t, events, func(e webEvent) bool {
			var asked askedRequest
			if e.Type == "permission.asked" && json.Unmarshal(e.Properties, &asked) == nil {
				srv.call(t, "POST", "/permission/"+asked.ID+"/reply", `{"reply":"once"}`, 200)
			}
			return rootIdle(e, root.ID)
		})
		if err := os.Remove(filepath.Join(dir, "notes.md")); err != nil {
			t.Fatalf("the first run's note: %v", err)
		}
	}
	srv.call(t, "POST", "/session/"+root.ID+"/prompt_async", `{"agent":"lead","parts":[{"type":"text","text":"go"}]}`, 204)
	var asked askedRequest
	until(t, events, func(e webEvent) bool {
		if rootIdle(e, root.ID) {
			t.Fatal("the run ended without asking")
		}
		return e.Type == "permission.asked" && json.Unmarshal(e.Properties, &asked) == nil
	})
	if asked.Metadata["agent"] != "writer" {
		t.Fatalf("asked: %+v, want the writer's Write", asked)
	}
	return srv, root.ID, asked
}

// sessionsOf lists the sessions of db (agentpool sessions list --json)
// by agent name: the newest of each agent (those of the last run).
func sessionsOf(t *testing.T, dir, db string) map[string]session.Session {
	t.Helper()
	r := runCLI(t, dir, "sessions", "list", "--db", db, "--json")
	if r.code != 0 {
		t.Fatalf("sessions list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var list []session.Session
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("sessions list: %v\n%s", err, r.stdout)
	}
	out := map[string]session.Session{}
	for _, s := range list {
		if o, ok := out[s.AgentName]; !ok || s.CreatedAt.After(o.CreatedAt) {
			out[s.AgentName] = s
		}
	}
	return out
}

// lastRun is the stream of the last run of a root's stored tree (the
// events from its last run_started of the root's own).
func lastRun(evs []event.Event) []event.Event {
	from := 0
	for i, e := range evs {
		if _, ok := e.(event.RunStarted); ok {
			from = i
		}
	}
	return evs[from:]
}

// finalMessage is the content of the last stream_complete in session
// id's log.
func finalMessage(t *testing.T, dir, db, id string) string {
	t.Helper()
	r := runCLI(t, dir, "sessions", "events", "--db", db, "--json", id)
	if r.code != 0 {
		t.Fatalf("sessions events: exit %d\n%s", r.code, r.stderr)
	}
	final := ""
	for _, e := range decodeJSONL(t, r.stdout) {
		if sc, ok := e.(event.StreamComplete); ok {
			final = sc.Message.Content
		}
	}
	return final
}

// writeResult is the writer's Write result in the root's final message:
// the test models answer with the results of their calls ({"task":
// {"output": ...}} twice, then {"Write": ...}).
func writeResult(t *testing.T, final string) string {
	t.Helper()
	out := final
	for range 2 {
		var r struct{ Task struct{ Output string } }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("the root's final message %s: %v", final, err)
		}
		out = r.Task.Output
	}
	var w struct{ Write string }
	if err := json.Unmarshal([]byte(out), &w); err != nil {
		t.Fatalf("the root's final message %s: %v", final, err)
	}
	return w.Write
}

// TestContinueAfterKill: a grandchild's Write waits for approval in `serve
// web` over SQLite; the server is killed (SIGKILL); the sessions stay
// running (waiting, not interrupted); a new `serve web` over the same
// database shows the same request id in GET /permission; allowed there,
// the file is written, every session completes, and the root's final
// message carries the Write's result. Rejected instead (from `serve
// agui`'s POST /approvals), nothing is written and the rejection reaches
// the root's final message.
func TestContinueAfterKill(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	for _, c := range []struct {
		name   string
		db     func(t *testing.T, dir string) string
		allow  bool
		server string
	}{
		{"sqlite allow web", sqliteDB, true, "web"},
		{"sqlite reject agui", sqliteDB, false, "agui"},
		{"postgres allow opencode", postgresDB, true, "opencode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(deepApprovalManifest), 0o644); err != nil {
				t.Fatal(err)
			}
			db := c.db(t, dir)
			first, root, asked := waitingRun(t, dir, db, c.server == "opencode")
			first.kill(t)
			if _, err := os.Stat(filepath.Join(dir, "notes.md")); !os.IsNotExist(err) {
				t.Fatalf("notes.md before any answer: %v", err)
			}

			second := startServe(t, dir, c.server, db)
			var early []string // the root's messages, read as soon as it serves
			if c.server != "agui" {
				early = messageIDs(t, second, root)
			}
			t.Cleanup(func() {
				if t.Failed() {
					r := runCLI(t, dir, "sessions", "events", "--db", db, "--tree", root)
					t.Logf("the run's events:\n%s%s", r.stdout, r.stderr)
				}
			})
			awaitAsked(t, second, asked.ID)
			if c.server == "agui" {
				if list := listAGUIApprovals(t, second); len(list) != 1 || list[0].ID != asked.ID || list[0].Tool != "Write" || list[0].Agent != "writer" {
					t.Fatalf("GET /approvals after the restart: %+v, want request %s of the writer's Write", list, asked.ID)
				}
			} else {
				if list := listPermissions(t, second); len(list) != 1 || list[0].ID != asked.ID || list[0].Metadata["agent"] != "writer" {
					t.Fatalf("GET /permission after the restart: %+v, want request %s", list, asked.ID)
				}
				var status map[string]struct{ Type string }
				if err := json.Unmarshal(second.call(t, "GET", "/session/status", "", 200), &status); err != nil || status[root].Type != "busy" {
					t.Errorf("GET /session/status while the run waits: %v %v, want the root busy", status, err)
				}
			}
			for name, s := range sessionsOf(t, dir, db) {
				if s.Status != session.StatusRunning {
					t.Errorf("%s is %s while its run waits after the restart, want running", name, s.Status)
				}
			}

			switch {
			case c.server == "agui":
				second.call(t, "POST", "/approvals/"+asked.ID, `{"reply":"reject_once","message":"not today"}`, 200)
			case c.allow:
				second.call(t, "POST", "/permission/"+asked.ID+"/reply", `{"reply":"once"}`, 200)
			default:
				second.call(t, "POST", "/permission/"+asked.ID+"/reply", `{"reply":"reject","message":"not today"}`, 200)
			}
			ended := second.await(t, func(l string) bool { return strings.Contains(l, "a continued run ended") }, "the continued run's end")
			if !strings.Contains(ended, "stop_reason=completed") {
				t.Fatalf("the continued run: %s", ended)
			}

			note, err := os.ReadFile(filepath.Join(dir, "notes.md"))
			write := writeResult(t, finalMessage(t, dir, db, root))
			if c.allow {
				if err != nil || string(note) != "approved\n" {
					t.Fatalf("notes.md after allowing: %q %v", note, err)
				}
				if !strings.HasPrefix(write, "Created ") || !strings.HasSuffix(write, "notes.md (1 line, 9 bytes).") {
					t.Errorf("the Write's result in the root's final message: %q", write)
				}
			} else {
				if !os.IsNotExist(err) {
					t.Fatalf("notes.md after rejecting: %q %v", note, err)
				}
				if want := "tool Write denied: approval rejected: rejected by the user in agui: not today"; write != want {
					t.Errorf("the Write's result in the root's final message: %q, want %q", write, want)
				}
			}
			if c.server == "opencode" {
				checkContinuedTranscript(t, second, root, finalMessage(t, dir, db, root))
			}
			if c.server != "agui" {
				// A client that read the transcript at once reads the same
				// messages later: none of a stored turn that the run's live
				// events showed again under other ids.
				later := messageIDs(t, second, root)
				if len(early) == 0 || len(later) < len(early) || !slices.Equal(later[:len(early)], early) {
					t.Errorf("the root's messages read at the server's start %v are not the first of those read after the run %v", early, later)
				}
			}
			tree := runCLI(t, dir, "sessions", "events", "--db", db, "--json", "--tree", root)
			if err := eventtest.CheckInvariants(root, lastRun(decodeJSONL(t, tree.stdout))); err != nil {
				t.Errorf("the stored tree of the continued run: %v", err)
			}
			for name, s := range sessionsOf(t, dir, db) {
				if s.Status != session.StatusCompleted {
					t.Errorf("%s is %s after the continued run, want completed", name, s.Status)
				}
			}
		})
	}
}

// checkContinuedTranscript: the root's transcript in the server that
// went on with its run (GET /session/{id}/message) starts with the
// earlier run's prompt ("first"), has the continued run's prompt ("go")
// next, every assistant message answers the user message before it, and
// the last text is the root's final message.
func checkContinuedTranscript(t *testing.T, srv *serveProc, root, final string) {
	t.Helper()
	var msgs []struct {
		Info struct {
			ID, Role, ParentID string
		}
		Parts []struct{ Type, Text string }
	}
	if err := json.Unmarshal(srv.call(t, "GET", "/session/"+root+"/message", "", 200), &msgs); err != nil {
		t.Fatal(err)
	}
	var prompts []string
	user, last := "", ""
	for i, m := range msgs {
		for _, p := range m.Parts {
			if p.Type != "text" {
				continue
			}
			if m.Info.Role == "user" {
				prompts = append(prompts, p.Text)
			} else {
				last = p.Text
			}
		}
		switch {
		case m.Info.Role == "user":
			user = m.Info.ID
		case i == 0 || m.Info.ParentID != user:
			t.Errorf("message %d (%s) answers %q, want the user message before it %q", i, m.Info.ID, m.Info.ParentID, user)
		}
	}
	if len(prompts) != 2 || prompts[0] != "first" || prompts[1] != "go" {
		t.Errorf("the continued root's transcript has the prompts %q, want [first go]", prompts)
	}
	if last != final {
		t.Errorf("the transcript's last text %q, want the root's final message %q", last, final)
	}
}

// messageIDs are the ids of the messages of GET /session/{id}/message.
func messageIDs(t *testing.T, srv *serveProc, id string) []string {
	t.Helper()
	var msgs []struct{ Info struct{ ID string } }
	if err := json.Unmarshal(srv.call(t, "GET", "/session/"+id+"/message", "", 200), &msgs); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range msgs {
		ids = append(ids, m.Info.ID)
	}
	return ids
}

func sqliteDB(_ *testing.T, dir string) string { return filepath.Join(dir, "sessions.db") }

func postgresDB(t *testing.T, _ string) string {
	_, db := pgtest.Schema(t)
	return db
}

// awaitAsked waits until srv logged that request id was asked (shown in
// its broker).
func awaitAsked(t *testing.T, srv *serveProc, id string) {
	t.Helper()
	srv.await(t, func(l string) bool { return strings.Contains(l, "approval requested") && strings.Contains(l, id) }, "request "+id)
}

// listPermissions is GET /permission.
func listPermissions(t *testing.T, srv *serveProc) []askedRequest {
	t.Helper()
	var list []askedRequest
	if err := json.Unmarshal(srv.call(t, "GET", "/permission", "", 200), &list); err != nil {
		t.Fatal(err)
	}
	return list
}

// aguiApproval is a request as AG-UI's GET /approvals lists it.
type aguiApproval struct {
	ID, SessionID, Agent, Tool string
}

// listAGUIApprovals is AG-UI's GET /approvals.
func listAGUIApprovals(t *testing.T, srv *serveProc) []aguiApproval {
	t.Helper()
	var got struct{ Approvals []aguiApproval }
	if err := json.Unmarshal(srv.call(t, "GET", "/approvals", "", 200), &got); err != nil {
		t.Fatal(err)
	}
	return got.Approvals
}

// teamApprovalManifest: the lead hands the job to a sequential team whose
// writer (a grandchild of the run) calls Write, which asks; the reviewer
// comes after it.
const teamApprovalManifest = `
default_agent: lead
agents:
  lead:
    tools: [subagent]
    model: {type: test, call_tools: [task], tool_args: {task: {agent_or_team: desk, prompt: Write notes.md.}}}
  writer:
    tools: [file_access]
    model: {type: test, call_tools: [Write], tool_args: {Write: {file_path: notes.md, content: "approved\n"}}}
  reviewer:
    model: {type: scripted, turns: ["reviewed"]}
teams:
  desk: {mode: sequential, members: [writer, reviewer]}
`

// TestContinueTeamAfterKill: a team member's Write waits when `serve
// opencode` is killed; a new one goes on with the team: the allowed Write
// runs, the next member (which had not started) runs after it, and the
// team's output reaches the root.
func TestContinueTeamAfterKill(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(teamApprovalManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	db := sqliteDB(t, dir)
	first, root, asked := waitingRun(t, dir, db, false)
	first.kill(t)

	second := startServe(t, dir, "opencode", db)
	awaitAsked(t, second, asked.ID)
	if list := listPermissions(t, second); len(list) != 1 || list[0].ID != asked.ID {
		t.Fatalf("GET /permission after the restart: %+v, want request %s", list, asked.ID)
	}
	if _, ok := sessionsOf(t, dir, db)["reviewer"]; ok {
		t.Fatal("the reviewer started before the writer's Write was answered")
	}
	second.call(t, "POST", "/permission/"+asked.ID+"/reply", `{"reply":"once"}`, 200)
	ended := second.await(t, func(l string) bool { return strings.Contains(l, "a continued run ended") }, "the continued run's end")
	if !strings.Contains(ended, "stop_reason=completed") {
		t.Fatalf("the continued run: %s", ended)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.md")); err != nil || string(b) != "approved\n" {
		t.Fatalf("notes.md after allowing: %q %v", b, err)
	}
	var final struct{ Task struct{ Output string } }
	if err := json.Unmarshal([]byte(finalMessage(t, dir, db, root)), &final); err != nil || final.Task.Output != "reviewed" {
		t.Errorf("the root's final message: %+v %v, want the team's output (the reviewer's)", final, err)
	}
	sessions := sessionsOf(t, dir, db)
	for _, name := range []string{"lead", "desk", "writer", "reviewer"} {
		if s, ok := sessions[name]; !ok || s.Status != session.StatusCompleted {
			t.Errorf("%s: %+v, want completed", name, s)
		}
	}
	tree := runCLI(t, dir, "sessions", "events", "--db", db, "--json", "--tree", root)
	if err := eventtest.CheckInvariants(root, decodeJSONL(t, tree.stdout)); err != nil {
		t.Errorf("the stored tree of the continued run: %v", err)
	}
}

// TestContinueWhenAnotherServerDies: a `serve web` runs, looking for
// waiting runs every 20ms (--waiting-scan); a second `serve web` on the
// same database runs the deep approval run, whose grandchild's Write
// waits: the first leaves it to the second while it lives, and once the
// second is killed (SIGKILL) claims it, shows the same request, and the
// run goes on there to its end when allowed.
func TestContinueWhenAnotherServerDies(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(deepApprovalManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	db := sqliteDB(t, dir)
	if r := runCLI(t, dir, "serve", "web", "--db", db, "--addr", "127.0.0.1:0", "--waiting-scan", "1ms"); r.code == 0 ||
		!strings.Contains(r.stderr, "--waiting-scan must be 0 (only at start) or at least 10ms, got 1ms") {
		t.Errorf("serve web --waiting-scan 1ms: exit %d\n%s", r.code, r.stderr)
	}
	watcher := startServe(t, dir, "web", db, "--waiting-scan", "20ms")
	other, root, asked := waitingRun(t, dir, db, false)
	watcher.await(t, func(l string) bool { return strings.Contains(l, "is another process's") && strings.Contains(l, root) }, "the run left to its process")
	if list := listPermissions(t, watcher); len(list) != 0 {
		t.Fatalf("GET /permission of the watcher while the other server lives: %+v, want none", list)
	}
	other.kill(t)

	awaitAsked(t, watcher, asked.ID)
	if list := listPermissions(t, watcher); len(list) != 1 || list[0].ID != asked.ID {
		t.Fatalf("GET /permission after the other server died: %+v, want request %s", list, asked.ID)
	}
	watcher.call(t, "POST", "/permission/"+asked.ID+"/reply", `{"reply":"once"}`, 200)
	ended := watcher.await(t, func(l string) bool { return strings.Contains(l, "a continued run ended") }, "the continued run's end")
	if !strings.Contains(ended, "stop_reason=completed") {
		t.Fatalf("the continued run: %s", ended)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.md")); err != nil || string(b) != "approved\n" {
		t.Fatalf("notes.md after allowing: %q %v", b, err)
	}
	for name, s := range sessionsOf(t, dir, db) {
		if s.Status != session.StatusCompleted {
			t.Errorf("%s is %s after the continued run, want completed", name, s.Status)
		}
	}
	tree := runCLI(t, dir, "sessions", "events", "--db", db, "--json", "--tree", root)
	if err := eventtest.CheckInvariants(root, decodeJSONL(t, tree.stdout)); err != nil {
		t.Errorf("the stored tree of the continued run: %v", err)
	}
}
