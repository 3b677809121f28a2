// The ACP front end of the approval broker (Options.Approvals): while a
// connection is served, the server is attached to the broker and asks the
// editor about the requests of its sessions with
// session/request_permission.

package acp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/agentpool/agentpool/approval"
)

// frontEnd is how the broker names the editor's answers (Answer.By).
const frontEnd = "acp"

// Permission option ids (they equal their kinds) and the broker replies
// they stand for.
var permissionReplies = map[string]approval.Reply{
	"allow_once":    approval.AllowOnce,
	"allow_always":  approval.AllowAlways,
	"reject_once":   approval.RejectOnce,
	"reject_always": approval.RejectAlways,
}

type permissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

type permissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  toolCallUpdate     `json:"toolCall"`
	Options   []permissionOption `json:"options"`
}

type permissionResponse struct {
	Outcome struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId"`
	} `json:"outcome"`
}

// cancelRequestParams are the params of $/cancel_request.
type cancelRequestParams struct {
	RequestID int64 `json:"requestId"`
}

// approvals is one connection's front end of the broker.
type approvals struct {
	c      *conn
	broker *approval.Broker

	mu    sync.Mutex
	shown map[string]*shownRequest // by broker request id
	wg    sync.WaitGroup           // the goroutines awaiting the editor's answers
}

// shownRequest is a request the editor was asked about.
type shownRequest struct {
	owner    string // the ACP session (its queue) the request was sent on
	rpcID    int64  // the session/request_permission's id
	conv     *converter
	card     approvalCard
	cancel   context.CancelFunc // stops awaiting the editor's answer
	answered atomic.Bool        // the editor answered (no $/cancel_request then)
	putBack  sync.Once          // the card is put back once
}

// settle puts the request's card back (once): before the broker wakes
// the run with the editor's answer, so that the card's own title and
// status precede whatever the tool does next.
func (sr *shownRequest) settle(allowed bool) {
	sr.putBack.Do(func() { sr.conv.approvalSettled(sr.card, allowed) })
}

// attachApprovals attaches c to the broker for the connection's life; the
// returned function detaches it and waits for what it started.
func (c *conn) attachApprovals(b *approval.Broker) (detach func()) {
	if b == nil {
		return func() {}
	}
	a := &approvals{c: c, broker: b, shown: map[string]*shownRequest{}}
	off := b.Attach(frontEnd, a.onNotice)
	return func() {
		off()
		a.wg.Wait()
	}
}

// onNotice runs on the broker's delivery, one notice at a time and never
// under the broker's lock. An asked request is shown (its card and the
// session/request_permission are queued) before the next notice is
// handled, so that a request's settlement always finds it shown.
func (a *approvals) onNotice(n approval.Notice) {
	switch n.Kind {
	case approval.Asked:
		a.ask(n.Request)
	case approval.Replied, approval.Cancelled:
		a.settled(n)
	}
}

// ask shows req to the editor when one of the connection's ACP sessions
// owns the session the tool runs in (the root or a descendant while its
// prompt runs); anything else is left to other front ends.
func (a *approvals) ask(req approval.Request) {
	c := a.c
	c.mu.Lock()
	sess := c.owners[req.SessionID]
	c.mu.Unlock()
	if sess == nil {
		return
	}
	sess.mu.Lock()
	var conv *converter
	if sess.run != nil {
		conv = sess.run.conv
	}
	sess.mu.Unlock()
	if conv == nil {
		c.log.Warn("acp: approval for a session with no prompt running here; left to other front ends", "session", req.SessionID, "request", req.ID)
		return
	}
	if _, pending := a.broker.Lookup(req.ID); !pending {
		return // settled before it could be shown
	}
	sr := &shownRequest{owner: sess.id, conv: conv}
	var wait func(context.Context, any) error
	card, err := conv.showApproval(req, func(tc toolCallUpdate) error {
		params := permissionRequest{SessionID: sess.id, ToolCall: tc, Options: permissionOptions(req)}
		params.ToolCall.SessionUpdate = ""
		var err error
		sr.rpcID, wait, err = c.calls.start(sess.id, methodRequestPermission, params)
		return err
	})
	if errors.Is(err, errRunOver) {
		c.log.Debug("acp: approval of a prompt that has ended; left to other front ends", "request", req.ID)
		return
	}
	if err != nil {
		c.log.Warn("acp: could not ask the editor", "request", req.ID, "err", err)
		a.reply(req.ID, approval.RejectOnce, "the editor could not be asked: "+err.Error())
		return
	}
	sr.card = card
	ctx, cancel := context.WithCancel(c.ctx)
	sr.cancel = cancel
	a.mu.Lock()
	a.shown[req.ID] = sr
	a.mu.Unlock()
	a.wg.Go(func() {
		defer cancel()
		var resp permissionResponse
		err := wait(ctx, &resp)
		if ctx.Err() != nil && !errors.Is(err, errClosed) {
			return // settled elsewhere (settled cancelled ctx) or the connection ended
		}
		sr.answered.Store(true)
		reply, msg := editorAnswer(resp, err)
		sr.settle(reply.Allows())
		a.reply(req.ID, reply, msg)
	})
}

// editorAnswer maps the editor's response to a broker reply: the option
// chosen, or a rejection that says why there was none.
func editorAnswer(resp permissionResponse, err error) (approval.Reply, string) {
	var rerr *rpcError
	switch {
	case errors.Is(err, errClosed):
		return approval.RejectOnce, "the editor disconnected"
	case errors.As(err, &rerr):
		return approval.RejectOnce, fmt.Sprintf("the editor failed to ask (%d %s)", rerr.Code, rerr.Message)
	case err != nil:
		return approval.RejectOnce, "the editor's answer was unreadable: " + err.Error()
	case resp.Outcome.Outcome == "cancelled":
		return approval.RejectOnce, "the editor cancelled the request"
	case resp.Outcome.Outcome == "selected":
		if r, ok := permissionReplies[resp.Outcome.OptionID]; ok {
			return r, ""
		}
		return approval.RejectOnce, fmt.Sprintf("the editor chose the unknown option %q", resp.Outcome.OptionID)
	}
	return approval.RejectOnce, fmt.Sprintf("the editor answered the unknown outcome %q", resp.Outcome.Outcome)
}

func (a *approvals) reply(id string, r approval.Reply, msg string) {
	err := a.broker.Reply(id, r, msg, frontEnd)
	switch {
	case err == nil, errors.Is(err, approval.ErrAnswered), errors.Is(err, approval.ErrUnknown):
		// The first answer stands (a rule, a timeout, a cancelled run).
	default:
		a.c.log.Warn("acp: approval reply failed", "request", id, "err", err)
	}
}

// settled handles the end of a shown request: an editor that was not the
// one to answer it (a rule, a timeout, another front end, the prompt was
// cancelled) gets $/cancel_request for its session/request_permission, so
// that no question stays open; then the card is put back.
func (a *approvals) settled(n approval.Notice) {
	a.mu.Lock()
	sr := a.shown[n.Request.ID]
	delete(a.shown, n.Request.ID)
	a.mu.Unlock()
	if sr == nil {
		return
	}
	if !sr.answered.Load() {
		sr.cancel()
		note := outRequest{JSONRPC: "2.0", Method: methodCancelRequest, Params: cancelRequestParams{RequestID: sr.rpcID}}
		if err := a.c.out.send(sr.owner, note); err != nil {
			a.c.log.Debug("acp: $/cancel_request not sent", "err", err)
		}
	}
	sr.settle(n.Kind == approval.Replied && n.Answer.Reply.Allows())
}

// permissionOptions are the four answers; the "always" ones name the rule
// they make (the agent and the tool, as the broker keeps it).
func permissionOptions(req approval.Request) []permissionOption {
	scope := req.Tool
	if req.Agent != "" {
		scope += " for " + req.Agent
	}
	return []permissionOption{
		{"allow_once", "Allow once", "allow_once"},
		{"allow_always", "Always allow " + scope, "allow_always"},
		{"reject_once", "Reject", "reject_once"},
		{"reject_always", "Always reject " + scope, "reject_always"},
	}
}
