// The session/prompt request: running one prompt turn.

package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/otelprop"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tracing"
)

func (c *conn) prompt(reqID json.RawMessage, params json.RawMessage) *rpcError {
	var p struct {
		SessionID string          `json:"sessionId"`
		Prompt    *[]contentBlock `json:"prompt"`
		Meta      map[string]any  `json:"_meta"`
	}
	if err := decodeParams(params, &p); err != nil {
		return err
	}
	if p.SessionID == "" {
		return invalidParams("sessionId is required")
	}
	if p.Prompt == nil {
		return invalidParams("prompt is required")
	}
	text, rerr := promptText(*p.Prompt)
	if rerr != nil {
		return rerr
	}
	// "/name args" runs a slash command of the pool (offered in
	// available_commands_update); any other prompt is the prompt.
	text, _ = c.s.pool.ExpandCommand(text)
	s, rerr := c.session(p.SessionID)
	if rerr != nil {
		return rerr
	}
	// _meta.traceparent (W3C trace context, as string values) makes the
	// client's span the parent of the run's root span when the pool is
	// traced; anything else in _meta is ignored.
	tp, _ := p.Meta["traceparent"].(string)
	ts, _ := p.Meta["tracestate"].(string)
	ctx, cancel := context.WithCancel(tracing.WithRemoteParent(c.ctx, otelprop.FromTraceparent(tp, ts)))
	run := &promptRun{cancel: cancel}
	s.mu.Lock()
	if s.run != nil {
		s.mu.Unlock()
		cancel()
		// The client's mistake, not the server's: Invalid Request, with
		// what to do instead.
		return errorf(codeInvalidRequest, "session %s already has a prompt in progress: wait for its answer or send session/cancel first", s.id)
	}
	s.run = run
	mode, modelOf := s.mode, s.modelOf
	s.mu.Unlock()
	key := string(bytes.TrimSpace(reqID))
	c.mu.Lock()
	c.prompts[key] = run
	view := c.view
	c.mu.Unlock()

	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		result, rerr := c.runPrompt(ctx, s, run, turnNode{mode, modelOf}, text, view)
		s.mu.Lock()
		s.run = nil
		s.mu.Unlock()
		c.mu.Lock()
		delete(c.prompts, key)
		c.mu.Unlock()
		if b := c.s.opts.Approvals; b != nil {
			// A request of the run answered elsewhere is withdrawn from
			// the editor (settled, through the broker's notice) before
			// the turn's response, not after it.
			b.Sync()
		}
		c.replyTo(s.id, reqID, result, rerr)
	}()
	return nil
}

type promptResult struct {
	StopReason string         `json:"stopReason"`
	Meta       map[string]any `json:"_meta,omitempty"`
}

// turnNode is what a prompt's turn runs: the session's mode and the agent
// whose model it runs on ("" for its own).
type turnNode struct{ mode, modelOf string }

func (c *conn) runPrompt(ctx context.Context, s *acpSession, run *promptRun, turn turnNode, text string, view spawnView) (any, *rpcError) {
	mode := turn.mode
	store := c.s.pool.Store()
	if stored, err := store.GetSession(ctx, s.id); err == nil && stored.Title == "" {
		t := title(text)
		if err := store.UpdateSession(ctx, s.id, func(st *session.Session) { st.Title = t }); err == nil {
			c.updater(s.id)(s.id, sessionInfoUpdate{SessionUpdate: updateSessionInfo, Title: t, UpdatedAt: time.Now().UTC().Format(time.RFC3339)})
		}
	}
	conv, done := c.runConverter(s, run, mode, view)
	defer done()
	c.log.Info("acp: prompt", "session", s.id, "mode", mode)
	req := pool.RunRequest{Node: mode, Prompt: text, SessionID: s.id, ModelOf: turn.modelOf}
	res, err := c.s.pool.RunSink(c.runContext(ctx, s, conv, &req), req, conv)
	stop := res.Result.StopReason
	if run.cancelled.Load() || (err != nil && ctx.Err() != nil) {
		stop = event.StopAborted
	}
	conv.Finish(stop)
	c.terms.releaseWanted(s.id)
	if err != nil && stop != event.StopAborted {
		c.log.Error("acp: run did not start", "session", s.id, "err", err)
		if errors.Is(err, session.ErrNotFound) {
			return nil, sessionNotFound(s.id)
		}
		if errors.Is(err, session.ErrRunning) {
			// Another run holds it (another client, `agentpool run
			// --session`): the client's request, not this agent, is at odds.
			return nil, errorf(codeInvalidRequest, "%v", err)
		}
		return nil, errorf(codeInternalError, "Internal error: %v", err)
	}
	meta := map[string]any{"agentpool": map[string]any{
		"session_id": s.id, "stop_reason": string(stop), "usage": res.TotalUsage, "cost": res.TotalCost,
	}}
	c.log.Info("acp: prompt ended", "session", s.id, "stop_reason", stop)
	switch {
	case stop == event.StopAborted:
		return promptResult{StopReason: stopCancelled, Meta: meta}, nil
	case stop == event.StopCompleted:
		return promptResult{StopReason: stopEndTurn, Meta: meta}, nil
	case stop == event.StopMaxTokens:
		return promptResult{StopReason: stopMaxTokens, Meta: meta}, nil
	case stop == event.StopRefusal:
		return promptResult{StopReason: stopRefusal, Meta: meta}, nil
	case errors.Is(res.Result.Err, agent.ErrMaxTurns):
		return promptResult{StopReason: stopMaxTurnRequests, Meta: meta}, nil
	}
	msg := string(stop)
	if res.Result.Err != nil {
		msg = res.Result.Err.Error()
	}
	if stop == event.StopBudget {
		// Not an internal error: a cap the user set was reached. ACP has
		// no stop reason for it (max_turn_requests counts requests).
		return nil, &rpcError{Code: codeInternalError, Message: "Run stopped: " + msg, Data: map[string]any{"sessionId": s.id, "stop_reason": string(stop)}}
	}
	return nil, &rpcError{Code: codeInternalError, Message: "Internal error: run failed: " + msg, Data: map[string]any{"sessionId": s.id, "stop_reason": string(stop)}}
}

// runConverter is the converter of a run on session s (a prompt's, or a
// run that goes on after a restart): the run's approvals are shown on its
// cards, and the children it starts belong to s while it runs. done
// forgets them.
func (c *conn) runConverter(s *acpSession, run *promptRun, mode string, view spawnView) (conv *converter, done func()) {
	var children []string
	conv = newConverter(s.id, view, c.updater(s.id), c.log)
	conv.interval = c.s.opts.ProgressInterval
	conv.rootAgent = mode
	s.mu.Lock()
	run.conv = conv
	s.mu.Unlock()
	conv.onSpawn = func(child string) {
		children = append(children, child) // under conv.mu
		c.mu.Lock()
		c.owners[child] = s
		c.mu.Unlock()
	}
	return conv, func() {
		conv.mu.Lock()
		kids := children
		conv.mu.Unlock()
		c.mu.Lock()
		for _, ch := range kids {
			delete(c.owners, ch)
		}
		c.mu.Unlock()
	}
}

// promptText joins a prompt's content blocks into the text the agent gets.
func promptText(blocks []contentBlock) (string, *rpcError) {
	var parts []string
	for i, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "resource_link":
			name := b.Name
			if name == "" {
				name = b.URI
			}
			parts = append(parts, fmt.Sprintf("[%s](%s)", name, b.URI))
		case "resource":
			if b.Resource == nil {
				return "", invalidParams("prompt[%d]: resource block without a resource", i)
			}
			if b.Resource.Text == nil {
				parts = append(parts, fmt.Sprintf("[binary resource %s omitted]", b.Resource.URI))
				continue
			}
			parts = append(parts, fmt.Sprintf("<context uri=%q>\n%s\n</context>", b.Resource.URI, *b.Resource.Text))
		case "image", "audio":
			return "", invalidParams("prompt[%d]: %s content is not supported (see promptCapabilities)", i, b.Type)
		default:
			return "", invalidParams("prompt[%d]: unknown content block type %q", i, b.Type)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

func title(prompt string) string {
	prompt = strings.Join(strings.Fields(prompt), " ")
	r := []rune(prompt)
	if len(r) > 60 {
		return string(r[:60]) + "..."
	}
	return prompt
}
