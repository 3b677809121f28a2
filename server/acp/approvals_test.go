package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
)

// deepApprovalYAML: the lead writes a file itself (its own Write asks,
// the default rule of Write), then hands a job to mid, which hands it to
// the writer, whose Write asks too (a grandchild's).
const deepApprovalYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Write, args: {file_path: lead.md, content: "from the lead\n"}}]
        - tool_calls: [{name: task, args: {agent_or_team: mid, description: Delegate on, prompt: Have the writer write hello.md.}}]
        - text: "Lead done."
    tools: [subagent, file_access]
  mid:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: writer, description: Write the note, prompt: Write hello.md.}}]
        - text: "Mid done."
    tools: [subagent]
  writer:
    tools: [file_access]
    model:
      type: test
      call_tools: [Write]
      tool_args:
        Write: {file_path: hello.md, content: "hello from the grandchild\n"}
`

// approvalServer starts a server whose pool asks through a broker the
// server attaches to, and opens a session whose cwd (the workspace) is a
// new directory.
func approvalServer(t *testing.T, src string, subagents bool) (h *harness, b *approval.Broker, sid, ws string) {
	t.Helper()
	m, err := config.Parse("agentpool.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	reg := hook.New(hook.Options{})
	b, err = approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg.UseBroker(b)
	ws = t.TempDir()
	p, err := pool.New(m, pool.Options{Workspace: ws, Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(); reg.Close(context.Background()) })
	h = startServer(t, p, Options{Approvals: b})
	h.initialize(subagents)
	var res struct {
		SessionID string `json:"sessionId"`
	}
	h.mustCall("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}}, &res)
	return h, b, res.SessionID, ws
}

// permissionParams are the params of a session/request_permission.
type permissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  toolCallUpdate     `json:"toolCall"`
	Options   []permissionOption `json:"options"`
}

func selected(option string) map[string]any {
	return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": option}}
}

// exchange reads the server's messages until the response to id and
// returns every line it wrote. onRequest answers each request of the
// server (nil: the request stays unanswered); onLine sees each message
// first.
func (h *harness) exchange(id string, onRequest func(wire, permissionParams) any, onLine func(wire)) []string {
	h.t.Helper()
	var lines []string
	for {
		w := h.next()
		lines = append(lines, strings.TrimSuffix(w.line, "\n"))
		if onLine != nil {
			onLine(w)
		}
		switch {
		case w.Method == methodRequestPermission:
			var p permissionParams
			if err := json.Unmarshal(w.Params, &p); err != nil {
				h.t.Fatal(err)
			}
			if r := onRequest(w, p); r != nil {
				h.send(map[string]any{"jsonrpc": "2.0", "id": w.ID, "result": r})
			}
		case w.Method != "" && w.ID != nil:
			h.t.Fatalf("unexpected request %s", w.line)
		case w.Method == "" && string(w.ID) == id:
			return lines
		}
	}
}

// normalizer makes wire lines comparable across runs: generated ids
// become their order of appearance, the workspace $WS, times and
// durations fixed.
type normalizer struct {
	ws  string
	ids map[string]string
	n   map[string]int
}

var (
	generatedID = regexp.MustCompile(`\b(ses|cal|per|msg|run)_[0-9A-Za-z]{8,}`)
	varyingNum  = regexp.MustCompile(`"(duration_ms|updatedAt|cost|input_tokens|output_tokens|total_tokens)":("[^"]*"|[0-9.]+)`)
)

func (n *normalizer) line(s string) string {
	if n.ids == nil {
		n.ids, n.n = map[string]string{}, map[string]int{}
	}
	s = strings.ReplaceAll(s, n.ws, "$WS")
	s = generatedID.ReplaceAllStringFunc(s, func(id string) string {
		if v, ok := n.ids[id]; ok {
			return v
		}
		prefix := id[:3]
		n.n[prefix]++
		v := fmt.Sprintf("%s_%d", prefix, n.n[prefix])
		n.ids[id] = v
		return v
	})
	return varyingNum.ReplaceAllString(s, `"$1":0`)
}

// checkGolden compares lines with testdata/name (go test -update rewrites
// it).
func checkGolden(t *testing.T, name string, lines []string) {
	t.Helper()
	got := strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("wire lines differ from %s (go test -update rewrites it):\n%s", path, diffLines(string(want), got))
	}
}

// announced checks the rule of every session/request_permission in
// lines: the message just before it is a tool_call with status pending on
// the same session that names the same toolCallId, title, kind and status
// (the editor's card does not change when it is asked), and that card
// was shown on that session before it was announced pending (no orphan
// card).
func announced(t *testing.T, lines []string) {
	t.Helper()
	shown := map[string]bool{} // sessionId + toolCallId of every tool_call before
	var prev wire
	var prevNote note
	for _, l := range lines {
		var w wire
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatal(err)
		}
		w.line = l
		switch w.Method {
		case methodRequestPermission:
			var p permissionParams
			_ = json.Unmarshal(w.Params, &p)
			u := prevNote.Update
			if prev.Method != methodSessionUpdate || u.SessionUpdate != updateToolCall || u.Status != statusPending || prevNote.SessionID != p.SessionID {
				t.Errorf("request_permission not announced by a pending tool_call just before it:\n%s\n%s", prev.line, l)
			}
			if u.ToolCallID != p.ToolCall.ToolCallID || u.Title != p.ToolCall.Title || u.Kind != p.ToolCall.Kind || u.Status != p.ToolCall.Status {
				t.Errorf("request_permission changes its card: announced %+v, asked %+v", u, p.ToolCall)
			}
			if !shown[p.SessionID+"\x00"+p.ToolCall.ToolCallID] && !strings.HasPrefix(p.ToolCall.ToolCallID, permissionToolCallPrefix) {
				t.Errorf("request_permission names a card never shown before: %s", l)
			}
		case methodSessionUpdate:
			if prev.Method == methodSessionUpdate && prevNote.Update.SessionUpdate == updateToolCall {
				shown[prevNote.SessionID+"\x00"+prevNote.Update.ToolCallID] = true
			}
		}
		prevNote = note{}
		if w.Method == methodSessionUpdate {
			_ = json.Unmarshal(w.Params, &prevNote)
		}
		prev = w
	}
}

// TestApprovalWire: the lead's own Write and its grandchild's Write are
// asked of the editor, each announced first on the card the editor was
// shown (the lead's tool call; the grandchild's spawn tool call), titled
// with the asking agent; allow once lets the lead write, reject once
// makes the writer see the rejection. The exact lines are golden.
func TestApprovalWire(t *testing.T) {
	for _, subagents := range []bool{false, true} {
		t.Run(fmt.Sprintf("subagents=%v", subagents), func(t *testing.T) {
			h, b, sid, ws := approvalServer(t, deepApprovalYAML, subagents)
			var asked []permissionParams
			lines := h.exchange(h.request("session/prompt", promptParams(sid, "go")), func(_ wire, p permissionParams) any {
				asked = append(asked, p)
				if len(asked) == 1 {
					return selected("allow_once")
				}
				return selected("reject_once")
			}, nil)
			if len(asked) != 2 {
				t.Fatalf("asked %d times, want 2", len(asked))
			}
			if got, want := asked[0].ToolCall.Title, "lead: Write lead.md"; got != want {
				t.Errorf("the lead's request is titled %q, want %q", got, want)
			}
			if got, want := asked[1].ToolCall.Title, "writer (child of mid): Write hello.md"; got != want {
				t.Errorf("the grandchild's request is titled %q, want %q", got, want)
			}
			if !strings.HasPrefix(asked[1].ToolCall.ToolCallID, spawnToolCallPrefix) {
				t.Errorf("the grandchild's request names %q, not its spawn tool call", asked[1].ToolCall.ToolCallID)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "lead.md")); err != nil || string(b) != "from the lead\n" {
				t.Errorf("allowed Write: %q, %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(ws, "hello.md")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("rejected Write wrote hello.md: %v", err)
			}
			all := strings.Join(lines, "\n")
			if !strings.Contains(all, "approval rejected: rejected by the user in acp") {
				t.Error("the writer did not see the rejection")
			}
			if len(b.Pending()) != 0 || len(b.Rules()) != 0 {
				t.Errorf("broker left %v pending, rules %v", b.Pending(), b.Rules())
			}
			announced(t, lines)
			norm := &normalizer{ws: ws}
			for i := range lines {
				lines[i] = norm.line(lines[i])
			}
			name := "approval_wire.golden"
			if subagents {
				name = "approval_wire_subagents.golden"
			}
			checkGolden(t, name, lines)
		})
	}
}

// noMessage checks that the server sent nothing, by making a round trip.
func (h *harness) noMessage() {
	h.t.Helper()
	id := h.request("authenticate", map[string]any{"methodId": "x"})
	if w := h.next(); string(w.ID) != id {
		h.t.Fatalf("unexpected message %s", w.line)
	}
}

// childApprovalYAML: the lead hands a note to the writer, whose Write asks.
const childApprovalYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: writer, description: Write the note, prompt: Write hello.md.}}]
        - text: "Lead done."
    tools: [subagent]
  writer:
    tools: [file_access]
    model:
      type: test
      call_tools: [Write]
      tool_args:
        Write: {file_path: hello.md, content: "hello from the writer\n"}
`

// TestApprovalAnswers: each answer of the editor reaches the child as the
// broker's reply; "always" answers become the broker's rules; an answer
// that chooses nothing (cancelled, an unknown option, an error) rejects,
// saying why.
func TestApprovalAnswers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  any // the result, or an rpcError
		written bool
		rule    approval.Reply
		says    string // in the child's tool result
	}{
		{name: "allow_once", answer: selected("allow_once"), written: true},
		{name: "allow_always", answer: selected("allow_always"), written: true, rule: approval.AllowAlways},
		{name: "reject_once", answer: selected("reject_once"), says: "approval rejected: rejected by the user in acp"},
		{name: "reject_always", answer: selected("reject_always"), rule: approval.RejectAlways, says: "approval rejected: rejected by the user in acp"},
		{name: "cancelled", answer: map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}, says: "the editor cancelled the request"},
		{name: "unknown option", answer: selected("maybe"), says: `the editor chose the unknown option \"maybe\"`},
		{name: "error", answer: &rpcError{Code: codeInternalError, Message: "boom"}, says: "the editor failed to ask (-32603 boom)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, b, sid, ws := approvalServer(t, childApprovalYAML, false)
			id := h.request("session/prompt", promptParams(sid, "go"))
			var lines []string
			for done := false; !done; {
				w := h.next()
				lines = append(lines, w.line)
				switch {
				case w.Method == methodRequestPermission:
					if e, ok := tc.answer.(*rpcError); ok {
						h.send(map[string]any{"jsonrpc": "2.0", "id": w.ID, "error": e})
					} else {
						h.answer(w.ID, tc.answer)
					}
				case string(w.ID) == id:
					if got := stopReason(t, w); got != stopEndTurn {
						t.Fatalf("stopReason %q", got)
					}
					done = true
				}
			}
			_, err := os.Stat(filepath.Join(ws, "hello.md"))
			if written := err == nil; written != tc.written {
				t.Errorf("hello.md written: %v, want %v", written, tc.written)
			}
			rules := b.Rules()
			switch {
			case tc.rule == "" && len(rules) != 0:
				t.Errorf("rules %+v, want none", rules)
			case tc.rule != "" && (len(rules) != 1 || rules[0].Reply != tc.rule || rules[0].Agent != "writer" || rules[0].Tool != "Write"):
				t.Errorf("rules %+v, want %s for Write of writer", rules, tc.rule)
			}
			if all := strings.Join(lines, ""); tc.says != "" && !strings.Contains(all, tc.says) {
				t.Errorf("the child's result does not say %q:\n%s", tc.says, all)
			}
			if strings.Contains(strings.Join(lines, ""), methodCancelRequest) {
				t.Error("an answered request was cancelled")
			}
			h.noMessage()
		})
	}
}

func (h *harness) answer(id json.RawMessage, result any) {
	h.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// requestID is the broker's id of a request, from its _meta.
func requestID(p permissionParams) string {
	m, _ := p.ToolCall.Meta["agentpool"].(map[string]any)
	s, _ := m["request_id"].(string)
	return s
}

// TestApprovalCancelWhileAsking: session/cancel while the editor is asked
// withdraws the request; the editor gets $/cancel_request for its
// session/request_permission, the prompt answers cancelled, and the
// editor's late "cancelled" answer (as the spec has the client send) is
// dropped. The exact lines are golden.
func TestApprovalCancelWhileAsking(t *testing.T) {
	h, b, sid, ws := approvalServer(t, childApprovalYAML, false)
	var permID json.RawMessage
	lines := h.exchange(h.request("session/prompt", promptParams(sid, "go")), func(w wire, _ permissionParams) any {
		permID = w.ID
		h.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
		return nil
	}, func(w wire) {
		if w.Method == methodCancelRequest {
			var p cancelRequestParams
			if err := json.Unmarshal(w.Params, &p); err != nil || fmt.Sprint(p.RequestID) != string(permID) {
				t.Errorf("$/cancel_request %s does not name the request %s", w.Params, permID)
			}
			h.answer(permID, map[string]any{"outcome": map[string]any{"outcome": "cancelled"}})
		}
	})
	var resp wire
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &resp)
	if got := stopReason(t, resp); got != stopCancelled {
		t.Fatalf("stopReason %q", got)
	}
	if !strings.Contains(strings.Join(lines, "\n"), `"method":"$/cancel_request"`) {
		t.Fatal("no $/cancel_request")
	}
	if _, err := os.Stat(filepath.Join(ws, "hello.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a cancelled Write wrote hello.md: %v", err)
	}
	if p := b.Pending(); len(p) != 0 {
		t.Errorf("pending after the cancel: %+v", p)
	}
	h.noMessage()
	announced(t, lines)
	norm := &normalizer{ws: ws}
	for i := range lines {
		lines[i] = norm.line(lines[i])
	}
	checkGolden(t, "approval_cancel.golden", lines)
}

// TestApprovalAnsweredElsewhere: a request answered by another front end
// is withdrawn from the editor ($/cancel_request) and its card put back;
// the editor's late answer changes nothing.
func TestApprovalAnsweredElsewhere(t *testing.T) {
	h, b, sid, ws := approvalServer(t, childApprovalYAML, false)
	var permID json.RawMessage
	lines := h.exchange(h.request("session/prompt", promptParams(sid, "go")), func(w wire, p permissionParams) any {
		permID = w.ID
		if err := b.Reply(requestID(p), approval.AllowOnce, "", "web"); err != nil {
			t.Errorf("reply of the other front end: %v", err)
		}
		return nil
	}, func(w wire) {
		if w.Method == methodCancelRequest {
			h.answer(permID, selected("reject_once")) // too late: ignored
		}
	})
	all := strings.Join(lines, "\n")
	// The withdrawal follows the other front end's answer through the
	// broker's notice; the server waits for the broker's notices before
	// it answers session/prompt, so it comes before the response.
	withdrawal := fmt.Sprintf(`"method":"$/cancel_request","params":{"requestId":%s}`, permID)
	if !strings.Contains(all, withdrawal) {
		t.Errorf("no $/cancel_request for %s before the prompt's response:\n%s", permID, all)
	}
	if !strings.Contains(all, `"title":"Spawned: writer","kind":"other","status":"in_progress"`) {
		t.Errorf("the spawn card was not put back:\n%s", all)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.md")); err != nil || string(b) != "hello from the writer\n" {
		t.Errorf("allowed elsewhere, hello.md: %q, %v", b, err)
	}
	h.noMessage()
}

// TestApprovalOtherSessions: a request of a session that no ACP session
// of the connection owns is not shown to the editor; it waits for another
// front end.
func TestApprovalOtherSessions(t *testing.T) {
	h, b, _, _ := approvalServer(t, childApprovalYAML, false)
	asked := make(chan approval.Request, 1)
	defer b.Subscribe(func(n approval.Notice) {
		if n.Kind == approval.Asked {
			asked <- n.Request
		}
	})()
	done := make(chan approval.Answer, 1)
	go func() {
		a, _ := b.Ask(context.Background(), approval.Request{SessionID: "ses_elsewhere", Agent: "x", Tool: "Write"})
		done <- a
	}()
	req := <-asked
	h.noMessage()
	if err := b.Reply(req.ID, approval.AllowOnce, "", "web"); err != nil {
		t.Fatal(err)
	}
	if a := <-done; a.Reply != approval.AllowOnce || a.By != "web" {
		t.Errorf("answer %+v", a)
	}
	h.noMessage()
}

// TestApprovalOwnCard: a request of the editor's session that names no
// tool call the editor was shown (an external agent's permission) gets a
// card of its own, announced pending before the request and closed with
// the answer.
func TestApprovalOwnCard(t *testing.T) {
	h, b, sid, _ := approvalServer(t, childApprovalYAML, false)
	id := h.request("session/prompt", promptParams(sid, "go"))
	var writeReq json.RawMessage
	var lines []string
	// The writer's Write waits for the editor: the prompt runs.
	for writeReq == nil {
		w := h.next()
		lines = append(lines, w.line)
		if w.Method == methodRequestPermission {
			writeReq = w.ID
		}
	}
	done := make(chan approval.Answer, 1)
	go func() {
		a, _ := b.Ask(context.Background(), approval.Request{SessionID: sid, Agent: "lead", Tool: "mcp__ext__deploy", Input: json.RawMessage(`{"target":"prod"}`)})
		done <- a
	}()
	var own permissionParams
	for own.SessionID == "" {
		w := h.next()
		lines = append(lines, w.line)
		if w.Method == methodRequestPermission {
			_ = json.Unmarshal(w.Params, &own)
			h.answer(w.ID, selected("allow_once"))
		}
	}
	if !strings.HasPrefix(own.ToolCall.ToolCallID, permissionToolCallPrefix+"per_") || own.ToolCall.Title != "lead: mcp__ext__deploy" {
		t.Errorf("own card %+v", own.ToolCall)
	}
	if a := <-done; a.Reply != approval.AllowOnce || a.By != frontEnd {
		t.Errorf("answer %+v", a)
	}
	h.answer(writeReq, selected("allow_once"))
	for {
		w := h.next()
		lines = append(lines, w.line)
		if string(w.ID) == id {
			break
		}
	}
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\n")
	}
	announced(t, lines)
	closed := fmt.Sprintf(`"toolCallId":%q,"status":"completed"`, own.ToolCall.ToolCallID)
	if !strings.Contains(strings.Join(lines, "\n"), closed) {
		t.Errorf("the own card was not closed completed")
	}
}
