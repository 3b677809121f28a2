package durable

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
)

const approvalsQueue = "agentpool-e2e-approvals"

// approvalManifest writes a manifest of boss -> lead -> writer (scripted
// models): the grandchild writes hello.md in the workspace, whose rule is
// ask (Write's default), and says what its Write returned.
func approvalManifest(t *testing.T, addr string) (manifest, workspace string) {
	t.Helper()
	dir := t.TempDir()
	workspace = filepath.Join(dir, "ws")
	if err := os.Mkdir(workspace, 0o700); err != nil {
		t.Fatal(err)
	}
	yaml := fmt.Sprintf(`execution: {engine: temporal, address: %q, task_queue: %s}
default_agent: boss
workspace: ws
agents:
  boss:
    workers: [lead]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: ask_lead, args: {prompt: "have hello.md written"}}]
        - text: "boss done"
  lead:
    workers: [writer]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: ask_writer, args: {prompt: "write hello.md"}}]
        - text: "lead done"
  writer:
    tools: [file_access]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Write, args: {file_path: hello.md, content: "hello\n"}}]
        - text: "writer done"
`, addr, approvalsQueue)
	manifest = filepath.Join(dir, "pool.yaml")
	if err := os.WriteFile(manifest, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return manifest, workspace
}

// frontEnd is a front end attached to a broker: it hands on the asked
// notices.
func frontEnd(t *testing.T, b *approval.Broker) <-chan approval.Request {
	asked := make(chan approval.Request, 8)
	t.Cleanup(b.Attach("test", func(n approval.Notice) {
		if n.Kind == approval.Asked {
			asked <- n.Request
		}
	}))
	return asked
}

// A grandchild's Write on an `agentpool worker` waits for a person: the
// request is stored in the grandchild's log and shown in the submitter's
// broker; a second submitter over the same store and Temporal server (the
// server started again) shows it again; its answer, a signal, lets the
// write happen and the run complete; the first submitter's copy is
// withdrawn once the answer is stored.
func TestApprovalSurvivesTheSubmitter(t *testing.T) {
	t.Parallel() // its own dev server and store; mostly waits
	addr := startDevServer(t)
	db := testDB(t)
	st := openTestDB(t, db)
	manifest, ws := approvalManifest(t, addr)
	cmd := exec.Command(cliBinary(t), "worker", "-c", manifest, "--db", db)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
	startProc(t, cmd)

	m, err := config.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Store: st, Registry: batteries.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dial := func() client.Client {
		c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	first, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var withdrawn = make(chan approval.Notice, 1)
	firstAsked := frontEnd(t, first)
	t.Cleanup(first.Subscribe(func(n approval.Notice) {
		if n.Kind == approval.Cancelled {
			withdrawn <- n
		}
	}))
	c1 := dial()
	node, _ := p.Node("boss")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type ended struct {
		root string
		out  SessionOutput
		err  error
	}
	done := make(chan ended, 1)
	sink, got := eventtest.Collect()
	go func() {
		root, out, err := RunRoot(ctx, c1, st, RootRequest{Node: node, Prompt: "go", TaskQueue: approvalsQueue,
			Approver: &Approver{Client: c1, Broker: first}}, sink)
		done <- ended{root, out, err}
	}()

	var req approval.Request
	select {
	case req = <-firstAsked:
	case e := <-done:
		t.Fatalf("the run ended without asking: %+v %v", e.out, e.err)
	}
	s, err := st.GetSession(ctx, req.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if s.AgentName != "writer" || s.Depth != 2 || req.Agent != "writer" || req.Tool != "Write" || req.Title != "Write hello.md" {
		t.Fatalf("request %+v of session %+v: want the grandchild writer's Write hello.md", req, s)
	}
	if _, err := os.Stat(filepath.Join(ws, "hello.md")); !os.IsNotExist(err) {
		t.Fatalf("hello.md exists before the answer: %v", err)
	}

	// The server started again: a new client and broker over the store.
	second, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	secondAsked := frontEnd(t, second)
	rctx, stopReopen := context.WithCancel(ctx)
	wait, err := (&Approver{Client: dial(), Broker: second}).Reopen(rctx, st)
	if err != nil {
		t.Fatal(err)
	}
	defer wait()
	defer stopReopen()
	again := <-secondAsked
	if again.ID != req.ID || again.SessionID != req.SessionID || string(again.Input) != string(req.Input) {
		t.Fatalf("shown again: %+v\nwant %+v", again, req)
	}
	if err := second.Reply(again.ID, approval.AllowOnce, "", "test"); err != nil {
		t.Fatal(err)
	}
	e := <-done
	if e.err != nil || e.out.StopReason != event.StopCompleted || e.out.Output != "boss done" {
		t.Fatalf("end = %+v, %v", e.out, e.err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.md")); err != nil || string(b) != "hello\n" {
		t.Fatalf("hello.md = %q, %v", b, err)
	}
	if n := <-withdrawn; n.Request.ID != req.ID {
		t.Errorf("withdrawn from the first broker: %+v", n)
	}
	evs := got()
	if err := eventtest.CheckInvariants(e.root, evs); err != nil {
		t.Errorf("invariants: %v", err)
	}
	var asked, replied int
	for _, ev := range evs {
		if sa, ok := ev.(event.Subagent); ok {
			if _, ok, _ := approval.ParseRequested(sa.Event); ok {
				asked++
			}
			if r, ok, _ := approval.ParseReplied(sa.Event); ok {
				replied++
				if r.Reply != approval.AllowOnce || r.By != "test" {
					t.Errorf("stored answer %+v", r)
				}
			}
		}
	}
	if asked != 1 || replied != 1 {
		t.Errorf("the stream has %d approval_requested and %d approval_replied, want 1 each", asked, replied)
	}
	var result string
	for _, ev := range evs {
		if sa, ok := ev.(event.Subagent); ok {
			if tc, ok := sa.Event.(event.ToolCallComplete); ok && tc.ToolName == "Write" {
				result = tc.ToolResult
			}
		}
	}
	if tcOK := !strings.Contains(result, "rejected") && result != ""; !tcOK {
		t.Errorf("Write's result = %q", result)
	}
}
