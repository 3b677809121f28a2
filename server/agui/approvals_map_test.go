package agui

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/spawn"
)

// settledSet is what the broker would answer to "is request id still
// pending": the test settles a request before it hands over its notice,
// as the broker does.
type settledSet struct {
	mu      sync.Mutex
	pending map[string]bool
}

func (s *settledSet) ask(id string) {
	s.mu.Lock()
	s.pending[id] = true
	s.mu.Unlock()
}

func (s *settledSet) settle(id string) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

func (s *settledSet) isPending(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending[id]
}

// approvalMapper is fixedMapper with an approval inbox.
func approvalMapper() (*mapper, *[]item, *runApprovals, *settledSet) {
	set := &settledSet{pending: map[string]bool{}}
	ra := newRunApprovals("thread-1", "run-1", set.isPending)
	m, items := fixedMapper("")
	m.cfg.Approvals = ra
	return m, items, ra, set
}

const (
	writeCall = "cal_w"
	writeID   = "per_001"
	hookID    = "per_002"
)

func writeRequest() approval.Request {
	return approval.Request{ID: writeID, SessionID: grand, Agent: "writer", Tool: "Write", CallID: writeCall,
		Input: json.RawMessage(`{"file_path":"hello.md","content":"hello\n"}`), Title: "Write hello.md",
		Rule: "the tool_approval policy of agent writer asks before Write", Created: time.Unix(1700000000, 0)}
}

// approvalStream: lead delegates to mid, mid to writer; the writer's
// Write asks (answered allow_once) and a hook asks for its Bash (the run
// is cancelled while it waits, after the writer ended); a request of a
// session of another run is ignored.
func approvalStream(ra *runApprovals, set *settledSet) (before, after []event.Event, notices func(step string)) {
	c := func(e event.Event) event.Event { return wrap([]string{child}, "mid", e) }
	g := func(e event.Event) event.Event { return wrap([]string{child, grand}, "writer", e) }
	before = []event.Event{
		event.RunStarted{SessionID: root, RunID: "run_a", AgentName: "lead"},
		event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_1", ToolName: "task", Args: `{"agent_or_team":"mid"}`}},
		event.PartEnd{Index: 0},
		event.SpawnSessionStart{ChildSessionID: child, ParentSessionID: root, ToolCallID: "cal_1", SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: "mid", SourceType: event.SourceAgent, Depth: 1},
		c(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: "cal_2", ToolName: "task", Args: `{"agent_or_team":"writer"}`}}),
		c(event.PartEnd{Index: 0}),
		c(event.SpawnSessionStart{ChildSessionID: grand, ParentSessionID: child, ToolCallID: "cal_2", SpawnMechanism: event.MechanismTask,
			RunMode: event.RunModeSync, SourceName: "writer", SourceType: event.SourceAgent, Depth: 2}),
		g(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartToolCall, ToolCallID: writeCall, ToolName: "Write",
			Args: `{"file_path":"hello.md","content":"hello\n"}`}}),
		g(event.PartEnd{Index: 0}),
	}
	after = []event.Event{
		g(event.ToolCallComplete{ToolCallID: writeCall, ToolName: "Write", ToolResult: "Created hello.md (1 line, 6 bytes).", AgentName: "writer"}),
		g(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText, Content: "Wrote it."}}),
		g(event.PartEnd{Index: 0}),
		c(event.SpawnSessionEnd{ChildSessionID: grand, ParentSessionID: child, ToolCallID: "cal_2", SourceName: "writer", Depth: 2,
			StopReason: event.StopCompleted, LastAssistantMessage: "Wrote it."}),
	}
	notices = func(step string) {
		w := writeRequest()
		switch step {
		case "asked":
			set.ask(writeID)
			ra.push(approval.Notice{Kind: approval.Asked, Request: w})
			// Another run's request: not this stream's.
			ra.push(approval.Notice{Kind: approval.Asked, Request: approval.Request{ID: "per_other", SessionID: "ses_elsewhere", Agent: "x", Tool: "Bash"}})
			h := approval.Request{ID: hookID, SessionID: grand, Agent: "writer", Tool: "Bash", Title: "Bash make",
				Input: json.RawMessage(`{"command":"make"}`), Rule: "hook guard asks"}
			set.ask(hookID)
			ra.push(approval.Notice{Kind: approval.Asked, Request: h})
		case "replied":
			set.settle(writeID)
			ra.push(approval.Notice{Kind: approval.Replied, Request: w, Answer: approval.Answer{Reply: approval.AllowOnce, By: frontEnd}})
		case "cancelled":
			set.settle(hookID)
			ra.push(approval.Notice{Kind: approval.Cancelled, Request: approval.Request{ID: hookID, SessionID: grand, Agent: "writer", Tool: "Bash"}})
		}
	}
	return before, after, notices
}

// The approval events on the wire: approval_asked attributed to the
// session that asks (its parent named), approval_replied after it and
// before the tool's result; a request withdrawn after its session ended is
// settled on the nearest open ancestor; another run's request is not
// shown.
func TestGoldenApprovals(t *testing.T) {
	m, items, ra, set := approvalMapper()
	before, after, notices := approvalStream(ra, set)
	for _, e := range before {
		m.Map(e)
	}
	notices("asked")
	m.ForwardApprovals() // the run waits: the forwarder maps the notices
	notices("replied")
	for _, e := range after {
		m.Map(e)
	}
	notices("cancelled")
	m.Finish(pool.RunResult{SessionID: root, Result: spawn.Result{StopReason: event.StopAborted}})
	got := encodeItems(*items)
	golden(t, "approvals.sse", got)

	evs := parseSSE(t, got)
	verifyStream(t, evs, root)
	var order []string
	resultAt := -1 // the writer's Write is in its activity
	if c := activityCall(t, evs, writeCall); c != nil {
		resultAt = c["resultAt"].(int)
	}
	for i, e := range evs {
		switch {
		case e["type"] == wire.TypeCustom:
			v := e["value"].(map[string]any)
			order = append(order, e["name"].(string)+":"+v["id"].(string))
		case e["type"] == wire.TypeToolCallResult && e["toolCallId"] == writeCall, i == resultAt:
			order = append(order, "result:"+writeCall)
		}
	}
	want := "approval_asked:per_001 approval_asked:per_002 approval_replied:per_001 result:cal_w approval_replied:per_002"
	if strings.Join(order, " ") != want {
		t.Fatalf("order %v\nwant  %s", order, want)
	}
	if len(ra.shown) != 0 {
		t.Errorf("still shown for GET /approvals after the run: %v", ra.shown)
	}
}

// A tool's result waits for the notice of its approval's answer when the
// broker has settled the request but not yet delivered the notice; the
// run's end waits likewise for every announced request.
func TestApprovalNoticeInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, items, ra, set := approvalMapper()
		before, after, notices := approvalStream(ra, set)
		for _, e := range before {
			m.Map(e)
		}
		notices("asked")
		m.ForwardApprovals()
		set.settle(writeID) // answered; the notice is still on its way

		done := make(chan struct{})
		go func() {
			m.Map(after[0]) // the Write's tool_call_complete
			close(done)
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the tool's result went out before its approval's answer")
		default:
		}
		notices("replied")
		<-done

		set.settle(hookID)
		done2 := make(chan struct{})
		go func() {
			m.Finish(pool.RunResult{SessionID: root, Result: spawn.Result{StopReason: event.StopAborted}})
			close(done2)
		}()
		synctest.Wait()
		select {
		case <-done2:
			t.Fatal("the run ended before the withdrawn request's notice")
		default:
		}
		ra.push(approval.Notice{Kind: approval.Cancelled, Request: approval.Request{ID: hookID, SessionID: grand}})
		<-done2
		evs := parseSSE(t, encodeItems(*items))
		verifyStream(t, evs, root)
		n := 0
		for _, e := range evs {
			if e["name"] == EventApprovalReplied {
				n++
			}
		}
		if n != 2 {
			t.Fatalf("%d approval_replied events, want 2", n)
		}
	})
}
