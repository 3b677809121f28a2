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

// startServe starts `agentpool serve SERVER` in dir over database db, on
// a free loopback port, and waits for its "listening" line; the cleanup
// kills it if the test did not.
func startServe(t *testing.T, dir, server, db string) *serveProc {
	t.Helper()
	cmd := exec.Command(cliBinary(t), "serve", server, "--db", db, "--addr", "127.0.0.1:0", "-c", "agentpool.yaml")
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
// waits.
func waitingRun(t *testing.T, dir, db string) (*serveProc, string, askedRequest) {
	t.Helper()
	srv := startServe(t, dir, "web", db)
	events := webEvents(t, srv.base)
	var root struct{ ID string }
	if err := json.Unmarshal(srv.call(t, "POST", "/session", `{}`, 200), &root); err != nil || root.ID == "" {
		t.Fatalf("create session: %v", err)
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

// sessionsOf lists the sessions of db (agentpool sessions list --json).
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
		out[s.AgentName] = s
	}
	return out
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
			first, root, asked := waitingRun(t, dir, db)
			first.kill(t)
			if _, err := os.Stat(filepath.Join(dir, "notes.md")); !os.IsNotExist(err) {
				t.Fatalf("notes.md before any answer: %v", err)
			}

			second := startServe(t, dir, c.server, db)
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
			tree := runCLI(t, dir, "sessions", "events", "--db", db, "--json", "--tree", root)
			if err := eventtest.CheckInvariants(root, decodeJSONL(t, tree.stdout)); err != nil {
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
	first, root, asked := waitingRun(t, dir, db)
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
