// A run's client tools and context (RunRequest.ClientTools,
// ClientResults, Instructions): what an AG-UI front end lends a run.

package pool

import (
	"errors"
	"fmt"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// checkClientRequest refuses client tools, results and instructions where
// no plain agent takes them.
func checkClientRequest(req RunRequest, name string, node spawn.Node, engine bool) error {
	if req.Instructions == "" && len(req.ClientTools) == 0 && len(req.ClientResults) == 0 {
		return nil
	}
	if engine {
		return errors.New("pool: client tools and instructions are not taken under a durable execution engine")
	}
	if _, ok := node.(*agent.Agent); !ok {
		return fmt.Errorf("pool: client tools and instructions go to an agent's model; %q is not a plain agent (a team, a custom node or an agent with connections)", name)
	}
	if len(req.ClientResults) > 0 && req.SessionID == "" {
		return errors.New("pool: client tool results answer the open calls of a stored session (RunRequest.SessionID)")
	}
	return nil
}

// clientHistory is the history of a run that brings the results of the
// open client calls of stored: the results must answer exactly those
// calls. The history ends before the results, which the run records.
func clientHistory(sess session.Session, stored []session.Message, results []model.Part) ([]model.Message, error) {
	open := map[string]bool{}
	for _, c := range session.OpenCalls(stored) {
		open[c.ToolCallID] = true
	}
	for _, r := range results {
		if !open[r.ToolCallID] {
			return nil, fmt.Errorf("pool: session %s has no open tool call %q to take a client's result", sess.ID, r.ToolCallID)
		}
		delete(open, r.ToolCallID)
	}
	for id := range open {
		return nil, fmt.Errorf("pool: the open tool call %q of session %s has no result among the client's", id, sess.ID)
	}
	// With the results the history gets no InterruptedResult for these
	// calls; the run appends them itself.
	msgs := append(stored[:len(stored):len(stored)], session.Message{SessionID: sess.ID, Message: model.Message{Role: model.RoleTool, Parts: results}})
	h := session.CompactedHistory(sess, msgs)
	return h[:len(h)-1], nil
}
