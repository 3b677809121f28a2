package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/agentpool/agentpool/pool"
)

// resumeNode returns the node that continues session sid (run --session):
// the agent or team the session belongs to, never another one. agent is
// --agent: empty, or the session's own. A manifest that does not define
// the session's agent is refused rather than run with its default agent,
// which would carry on another agent's conversation under its name.
//
// A child session keeps its depth when it is continued, and max_depth
// counts from the root of its tree: w is told up front how much
// delegation that leaves.
func resumeNode(ctx context.Context, p *pool.Pool, sid, agent, manifest string, w io.Writer) (string, error) {
	s, err := p.Store().GetSession(ctx, sid)
	if err != nil {
		return "", err
	}
	if agent != "" && agent != s.AgentName {
		return "", fmt.Errorf("session %s belongs to agent %q; --agent %s would switch agents (leave out --agent to continue with %s)", sid, s.AgentName, agent, s.AgentName)
	}
	if _, ok := p.Node(s.AgentName); !ok {
		return "", fmt.Errorf("session %s was run by agent %q, which %s does not define (continue it with the manifest it was run with)", sid, s.AgentName, manifest)
	}
	if s.Depth > 0 {
		maxDepth := p.Runtime().Limits().MaxDepth
		can := "this run cannot delegate"
		if left := maxDepth - s.Depth; left > 0 {
			can = fmt.Sprintf("this run can delegate %s", plural(left, "more level"))
		}
		fmt.Fprintf(w, "agentpool: session %s is at depth %d of its tree and max_depth (%d) counts from the tree's root: %s\n", sid, s.Depth, maxDepth, can)
	}
	return s.AgentName, nil
}
