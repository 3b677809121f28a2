package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

type permissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  toolCallUpdate     `json:"toolCall"`
	Options   []permissionOption `json:"options"`
}

func selected(option string) map[string]any {
	return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": option}}
}

// expectPermission reads the next message, which must be a
// request_permission, and returns it with its id.
func (h *harness) expectPermission() (json.RawMessage, permissionParams) {
	h.t.Helper()
	w := h.next()
	if w.Method != methodRequestPermission {
		h.t.Fatalf("want session/request_permission, got %s", w.line)
	}
	var p permissionParams
	if err := json.Unmarshal(w.Params, &p); err != nil {
		h.t.Fatal(err)
	}
	return w.ID, p
}

func (h *harness) answer(id json.RawMessage, result any) {
	h.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// ask runs RequestApproval in the background.
func ask(srv *Server, ctx context.Context, req ApprovalRequest) <-chan ApprovalDecision {
	ch := make(chan ApprovalDecision, 1)
	go func() { ch <- srv.RequestApproval(ctx, req) }()
	return ch
}

func decision(t *testing.T, ch <-chan ApprovalDecision) ApprovalDecision {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("RequestApproval did not return")
	}
	return ""
}

// noMessage checks that the server sent nothing, by making a round trip.
func (h *harness) noMessage() {
	h.t.Helper()
	id := h.request("authenticate", map[string]any{"methodId": "x"})
	if w := h.next(); string(w.ID) != id {
		h.t.Fatalf("unexpected message %s", w.line)
	}
}

func TestRequestApproval(t *testing.T) {
	h := startServer(t, servertest.Pool(t, nestedYAML), Options{})
	h.initialize(false)
	sid := h.newSession()
	ctx := context.Background()
	req := ApprovalRequest{SessionID: sid, Agent: "lead", ToolName: "shell", CallID: "cal_1", Title: "Run ls", Kind: "execute", Input: json.RawMessage(`{"cmd":"ls"}`), Reason: "policy"}

	ch := ask(h.srv, ctx, req)
	id, p := h.expectPermission()
	if p.SessionID != sid || p.ToolCall.ToolCallID != "cal_1" || p.ToolCall.Title != "Run ls" || p.ToolCall.Kind != "execute" ||
		p.ToolCall.Status != statusPending || string(p.ToolCall.RawInput) != `{"cmd":"ls"}` {
		t.Errorf("request %+v", p)
	}
	kinds := map[string]bool{}
	for _, o := range p.Options {
		kinds[o.Kind] = o.OptionID != "" && o.Name != ""
	}
	for _, k := range []string{"allow_once", "allow_always", "reject_once", "reject_always"} {
		if !kinds[k] {
			t.Errorf("option %s missing in %+v", k, p.Options)
		}
	}
	h.answer(id, selected(optionAllowAlways))
	if d := decision(t, ch); d != ApprovalAllowedAlways || !d.Allowed() {
		t.Fatalf("decision %q", d)
	}
	// Remembered for the rest of the session: no second question.
	if d := decision(t, ask(h.srv, ctx, req)); d != ApprovalAllowedAlways {
		t.Fatalf("second decision %q", d)
	}
	h.noMessage()

	write := req
	write.ToolName, write.CallID = "write", "cal_2"
	ch = ask(h.srv, ctx, write)
	id, _ = h.expectPermission()
	h.answer(id, selected(optionRejectOnce))
	if d := decision(t, ch); d != ApprovalRejected || d.Allowed() {
		t.Fatalf("reject once: %q", d)
	}
	ch = ask(h.srv, ctx, write) // asked again
	id, _ = h.expectPermission()
	h.answer(id, map[string]any{"outcome": map[string]any{"outcome": "cancelled"}})
	if d := decision(t, ch); d != ApprovalCancelled {
		t.Fatalf("cancelled outcome: %q", d)
	}
	ch = ask(h.srv, ctx, write)
	id, _ = h.expectPermission()
	h.answer(id, selected(optionAllowOnce))
	if d := decision(t, ch); d != ApprovalAllowedOnce {
		t.Fatalf("allow once: %q", d)
	}

	rm := req
	rm.ToolName = "rm"
	ch = ask(h.srv, ctx, rm)
	id, _ = h.expectPermission()
	h.answer(id, selected(optionRejectAlways))
	if d := decision(t, ch); d != ApprovalRejected {
		t.Fatalf("reject always: %q", d)
	}
	if d := decision(t, ask(h.srv, ctx, rm)); d != ApprovalRejected {
		t.Fatalf("remembered reject: %q", d)
	}
	h.noMessage()

	// A client error: unavailable (deny).
	other := req
	other.ToolName = "other"
	ch = ask(h.srv, ctx, other)
	id, _ = h.expectPermission()
	h.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": "boom"}})
	if d := decision(t, ch); d != ApprovalUnavailable {
		t.Fatalf("client error: %q", d)
	}

	// The prompt is cancelled while the question is open.
	cctx, cancel := context.WithCancel(ctx)
	ch = ask(h.srv, cctx, other)
	id, _ = h.expectPermission()
	cancel()
	if d := decision(t, ch); d != ApprovalCancelled {
		t.Fatalf("cancelled ctx: %q", d)
	}
	h.answer(id, selected(optionAllowOnce)) // late answer: ignored
	h.noMessage()

	// A session that is not on this connection.
	unknown := req
	unknown.SessionID = "ses_elsewhere"
	if d := decision(t, ask(h.srv, ctx, unknown)); d != ApprovalUnavailable {
		t.Fatalf("unknown session: %q", d)
	}
	h.close()
	if d := h.srv.RequestApproval(ctx, req); d != ApprovalUnavailable {
		t.Fatalf("no connection: %q", d)
	}
}

func TestRequestApprovalPendingAtEOF(t *testing.T) {
	h := startServer(t, servertest.Pool(t, nestedYAML), Options{})
	h.initialize(false)
	sid := h.newSession()
	ch := ask(h.srv, context.Background(), ApprovalRequest{SessionID: sid, ToolName: "shell", CallID: "c"})
	h.expectPermission()
	h.close()
	if d := decision(t, ch); d != ApprovalUnavailable {
		t.Fatalf("pending at EOF: %q", d)
	}
}

// approvalYAML asks before the lead's task tool and the searcher's worker
// tool (a tool of a child session).
const approvalYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: test
      call_tools: [task]
      tool_args:
        task: {agent_or_team: searcher, prompt: "Search.", description: "Search"}
      custom_output_text: "Plan complete."
    tools: [subagent]
    tool_approval: {task: ask}
  searcher:
    model:
      type: test
      call_tools: [ask_summarizer]
      tool_args:
        ask_summarizer: {prompt: "Summarize."}
      custom_output_text: "Search finished."
    workers: [summarizer]
    tool_approval: {"ask_*": ask}
  summarizer:
    model: {type: test, custom_output_text: "Summary: fine."}
`

// TestUseApprovals: the hook registry's approval/request seam asks the
// editor, on the root ACP session also for a tool of a child session; a
// rejection denies the tool (the model is told), an allow runs it.
func TestUseApprovals(t *testing.T) {
	m, err := config.Parse("agentpool.yaml", []byte(approvalYAML))
	if err != nil {
		t.Fatal(err)
	}
	reg := hook.New(hook.Options{})
	reg.ApplyManifest(m)
	p, err := pool.New(m, pool.Options{Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(); reg.Close(context.Background()) })
	h := startServer(t, p, Options{})
	remove := h.srv.UseApprovals(reg)
	defer remove()
	h.initialize(false)
	sid := h.newSession()
	asked := map[string]int{}
	var spawnedSessions []string
	w, notes := h.wait(h.request("session/prompt", promptParams(sid, "go")), func(req wire) any {
		var p permissionParams
		_ = json.Unmarshal(req.Params, &p)
		if p.SessionID != sid {
			t.Errorf("permission asked on %s, want the root session %s", p.SessionID, sid)
		}
		meta, _ := p.ToolCall.Meta["agentpool"].(map[string]any)
		if s, _ := meta["session_id"].(string); s != sid {
			spawnedSessions = append(spawnedSessions, s)
		}
		asked[p.ToolCall.Title]++
		if p.ToolCall.Title == "ask_summarizer" {
			return selected(optionRejectOnce)
		}
		return selected(optionAllowAlways)
	})
	if got := stopReason(t, w); got != stopEndTurn {
		t.Fatalf("stopReason %q", got)
	}
	closed := checkUpdates(t, sid, notes, false)
	if asked["task"] != 1 || asked["ask_summarizer"] != 1 || len(asked) != 2 {
		t.Errorf("asked %v", asked)
	}
	if len(spawnedSessions) != 1 {
		t.Errorf("questions from child sessions: %v", spawnedSessions)
	}
	// The task ran (one child); the rejected worker never spawned.
	if len(closed) != 1 {
		t.Errorf("spawns %v", closed)
	}
	var denied bool
	for _, n := range notes {
		if n.Update.SessionUpdate == updateToolCallUpdate && strings.Contains(string(n.Update.Content), "rejected in the editor") {
			denied = true
		}
	}
	if !denied {
		t.Error("the rejection did not reach the tool result")
	}

	// Without an editor the seam's end denies (fail closed).
	h.close()
	d := reg.RequestApproval(context.Background(), hook.ApprovalRequest{SessionID: sid, ToolName: "task"})
	if d.Allowed() || d.Outcome != hook.Unavailable {
		t.Errorf("without an editor: %+v", d)
	}
}
