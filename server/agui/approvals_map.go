package agui

import (
	"encoding/json"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
)

// Names of the CUSTOM events of approvals: snake_case like the server's
// other CUSTOM events (tool_call_progress, plan_update).
const (
	EventApprovalAsked   = "approval_asked"
	EventApprovalReplied = "approval_replied"
)

// approvalOptions are the answers a client may send, in the order a client
// shows them.
var approvalOptions = []string{
	string(approval.AllowOnce), string(approval.AllowAlways),
	string(approval.RejectOnce), string(approval.RejectAlways),
}

// askedApproval is an approval the stream announced and has not settled.
type askedApproval struct {
	sess   *sessState // the session the tool runs in
	callID string
}

// approvalValue is req as the wire's Approval, for the session whose
// parent is parent ("" for a root).
func approvalValue(req approval.Request, parent string) wire.Approval {
	in := req.Input
	if len(in) == 0 || string(in) == "null" || !json.Valid(in) {
		in = json.RawMessage(`{}`)
	}
	return wire.Approval{ID: req.ID, SessionID: req.SessionID, ParentSessionID: parent, Agent: req.Agent,
		Tool: req.Tool, Title: req.Title, Input: in, ToolCallID: req.CallID, Reason: req.Rule, Options: approvalOptions}
}

// ForwardApprovals maps the notices queued for the run (the forwarder's
// call while the run waits for an answer and emits nothing).
func (m *mapper) ForwardApprovals() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drainApprovals()
}

// drainApprovals maps the queued notices, in the broker's order. m.mu is
// held.
func (m *mapper) drainApprovals() {
	if m.cfg.Approvals == nil {
		return
	}
	for _, n := range m.cfg.Approvals.take() {
		m.mapApproval(n)
	}
}

// mapApproval announces a request of a session of this run
// (approval_asked) and settles one it announced (approval_replied); the
// notices of other runs' requests are ignored.
func (m *mapper) mapApproval(n approval.Notice) {
	if m.finished {
		return
	}
	req := n.Request
	switch n.Kind {
	case approval.Asked:
		s := m.sessions[req.SessionID]
		if s == nil || m.asked[req.ID] != nil {
			return // not a session of this run's tree, or announced already
		}
		m.start()
		parent := ""
		if s.parent != nil {
			parent = s.parent.id
		}
		v := approvalValue(req, parent)
		m.asked[req.ID] = &askedApproval{sess: s, callID: req.CallID}
		m.cfg.Approvals.show(v)
		m.out(m.live(s), classLifecycle, &wire.Event{Type: wire.TypeCustom, Name: EventApprovalAsked, Value: mustJSON(v)})
	case approval.Replied, approval.Cancelled:
		a := m.asked[req.ID]
		if a == nil {
			return
		}
		delete(m.asked, req.ID)
		m.cfg.Approvals.settle(req.ID)
		ans := n.Answer
		if n.Kind == approval.Cancelled {
			ans = approval.Answer{Reply: approval.RejectOnce, By: approval.ByCancelled, Message: "the run was cancelled"}
		}
		v := wire.ApprovalReplied{ID: req.ID, SessionID: req.SessionID, Reply: string(ans.Reply), By: ans.By, Message: ans.Message}
		m.out(m.live(a.sess), classLifecycle, &wire.Event{Type: wire.TypeCustom, Name: EventApprovalReplied, Value: mustJSON(v)})
	}
}

// live is s, or its nearest ancestor that has not ended: an event is
// never attributed to a subagent the stream has closed.
func (m *mapper) live(s *sessState) *sessState {
	for s.ended && s.parent != nil {
		s = s.parent
	}
	return s
}

// awaitApprovals waits, under m.mu, until every announced approval that
// match selects and that the broker has settled has had its
// approval_replied event. The broker queues the notice before it wakes
// the run, so it is on its way; waiting for it keeps the stream's order:
// a tool's result comes after its approval_replied, and the run's end
// after every one.
func (m *mapper) awaitApprovals(match func(*askedApproval) bool) {
	ra := m.cfg.Approvals
	if ra == nil {
		return
	}
	for {
		m.drainApprovals()
		if !m.settledUnseen(match) || !ra.wait() {
			return
		}
	}
}

// settledUnseen reports whether an announced approval that match selects
// was settled by the broker but its notice has not been mapped yet.
func (m *mapper) settledUnseen(match func(*askedApproval) bool) bool {
	if m.finished {
		return false
	}
	for id, a := range m.asked {
		if match(a) && !m.cfg.Approvals.pending(id) {
			return true
		}
	}
	return false
}
