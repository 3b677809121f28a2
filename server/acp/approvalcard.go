// The converter's side of an approval: the tool call card that shows a
// pending request, announced pending before session/request_permission
// and put back once the request is settled.

package acp

import (
	"errors"
	"fmt"

	"github.com/agentpool/agentpool/approval"
)

// permissionToolCallPrefix starts the id of a card announced for a
// request that belongs to no tool call the editor was shown:
// "permission:<request id>".
const permissionToolCallPrefix = "permission:"

// errRunOver: the prompt whose run asked has been answered; nothing of it
// may be sent any more.
var errRunOver = errors.New("acp: the prompt's run is over")

// approvalCard is the tool call of the root ACP session that shows one
// pending request.
type approvalCard struct {
	id    string // its toolCallId
	tool  string // its c.tools key: the root's own tool call, or a card of the request's own
	child string // the child session of a spawn card; "" otherwise
	own   bool   // a card of the request's own ("permission:<request id>")
}

// showApproval announces the card of req on the root session, a tool_call
// with status pending whose title names the asking agent, and calls ask
// with that tool call (the session/request_permission names the same
// fields, so the editor's card does not change when it is asked). Both
// happen under the converter's lock: no other update of the card comes
// between them. The card is:
//
//   - the root's own tool call (req.CallID), as shown by its tool_call;
//   - for a descendant's tool, the card the client was shown for the
//     session it runs in: its spawn tool call ("spawn:<child>"), or for a
//     client without the spawn tool calls (flat) the delegating tool call
//     of the root that shows it or its ancestor;
//   - else a card of its own, "permission:<request id>", closed when the
//     request is settled.
func (c *converter) showApproval(req approval.Request, ask func(toolCallUpdate) error) (approvalCard, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return approvalCard{}, errRunOver
	}
	meta := approvalMeta(req)
	u := toolCallUpdate{
		SessionUpdate: updateToolCall, Status: statusPending, Kind: "other",
		Title: c.askingAgent(req, nil) + ": " + req.Title, RawInput: rawJSON(req.Input), Meta: meta,
	}
	var card approvalCard
	key := c.root + "\x00" + req.CallID
	st := c.spawns[req.SessionID]
	switch t := c.tools[key]; {
	case req.SessionID == c.root && req.CallID != "" && t != nil:
		card = approvalCard{id: t.id, tool: key}
		u.ToolCallID, u.Title, u.Kind = t.id, c.askingAgent(req, nil)+": "+t.title, t.kind
		u.Locations, u.RawInput = toLocations(t.locs), t.input
	case st != nil && !st.closed && !st.owner.closed:
		// The card that shows the child: its spawn tool call, or (flat)
		// the delegating tool call of it or of its ancestor.
		o := st.owner
		card = approvalCard{id: o.cardID, child: o.child}
		u.ToolCallID, u.Title = card.id, c.askingAgent(req, st)+": "+req.Title
		if call, ok := st.calls[req.CallID]; ok {
			u.Title, u.Kind = c.askingAgent(req, st)+": "+call.title, call.kind
		}
		// Clients that replace a tool call's content with a tool_call's
		// keep the child's progress.
		u.Content = o.content()
	default:
		id := permissionToolCallPrefix + req.ID
		card = approvalCard{id: id, tool: c.root + "\x00" + id, own: true}
		u.ToolCallID = id
		c.tools[card.tool] = &openTool{session: c.root, id: id, title: u.Title, kind: u.Kind, input: u.RawInput}
		c.toolOrder = append(c.toolOrder, card.tool)
	}
	c.send(c.root, u)
	if err := ask(u); err != nil {
		c.settleCard(card, false)
		return approvalCard{}, err
	}
	if c.asking == nil {
		c.asking = map[string]int{}
	}
	c.asking[card.id]++
	return card, nil
}

// approvalSettled puts back the card of a request that was answered or
// withdrawn, unless another request still shows on it: the root's own
// tool call gets its title back (and status in_progress when the tool
// may run; a rejected one ends failed with its result), a spawn tool call
// all it showed before, and a card of the request's own ends completed
// (allowed) or failed. Nothing is sent for a card that was closed
// meanwhile, nor after the run's Finish.
func (c *converter) approvalSettled(card approvalCard, allowed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.asking[card.id]--; c.asking[card.id] > 0 {
		return
	}
	delete(c.asking, card.id)
	if c.finished {
		return
	}
	c.settleCard(card, allowed)
}

func (c *converter) settleCard(card approvalCard, allowed bool) {
	switch {
	case card.child != "":
		st := c.spawns[card.child]
		if st == nil || (st.closed && (!st.inTool || st.toolDone)) {
			return // its card ended (a delegating tool call ends with its tool)
		}
		u := st.card
		u.SessionUpdate, u.Content = updateToolCallUpdate, nil
		c.send(c.root, u)
	case card.tool != "":
		t := c.tools[card.tool]
		if t == nil {
			return // completed meanwhile
		}
		if !card.own {
			u := toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: t.id, Title: t.title}
			if allowed {
				u.Status = statusInProgress
			}
			c.send(c.root, u)
			return
		}
		delete(c.tools, card.tool)
		status := statusFailed
		if allowed {
			status = statusCompleted
		}
		c.send(c.root, toolCallUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: t.id, Status: status})
	}
}

// askingAgent names the agent that asks: "writer" for the root's own
// tool, "writer (child of lead)" for a child's (st is its spawn).
func (c *converter) askingAgent(req approval.Request, st *spawnState) string {
	if st == nil {
		if req.Agent != "" {
			return req.Agent
		}
		return c.rootAgent
	}
	agent := req.Agent
	if agent == "" {
		agent = st.name
	}
	parent := c.rootAgent
	if p := c.spawns[st.parent]; p != nil {
		parent = p.name
	}
	if parent == "" {
		return agent
	}
	return fmt.Sprintf("%s (child of %s)", agent, parent)
}

// approvalMeta is the _meta of an approval's card and request: which
// request, where the tool runs, the agent, the tool and why it asks.
func approvalMeta(req approval.Request) map[string]any {
	m := map[string]any{"type": "approval", "request_id": req.ID, "session_id": req.SessionID, "tool": req.Tool}
	for k, v := range map[string]string{"agent": req.Agent, "tool_call_id": req.CallID, "reason": req.Rule} {
		if v != "" {
			m[k] = v
		}
	}
	return map[string]any{"agentpool": m}
}
