// A continued team (spawn.Continuation): the team's run goes on after its
// process died while members of it waited for a person's answer.

package team

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

var _ spawn.Continuer = (*Team)(nil)

// CanContinue implements spawn.Continuer: every member the team's log
// started must be one of its members, and every waiting child one of
// them, with the node to continue it. A team calls no tools, so no call
// of its own waits.
func (t *Team) CanContinue(c *spawn.Continuation) error {
	if c == nil || c.Waiting == nil {
		return errors.New("nothing to continue")
	}
	if len(c.Waiting.Requests) > 0 {
		return fmt.Errorf("team %s has tool calls that wait, which a team never makes", t.cfg.Name)
	}
	starts, err := t.starts(c.Waiting)
	if err != nil {
		return err
	}
	for _, w := range c.Waiting.Children {
		member := false
		for _, s := range starts {
			member = member || (s != nil && s.ChildSessionID == w.Session.ID)
		}
		if !member {
			return fmt.Errorf("the waiting child %s is no member of team %s", w.Session.ID, t.cfg.Name)
		}
		if k := c.Children[w.Session.ID]; k == nil || k.Node == nil || k.Continue == nil {
			return fmt.Errorf("the waiting child %s has nothing to continue it", w.Session.ID)
		}
	}
	return nil
}

// starts pairs each member with the spawn_session_start that started it
// in the team's log (nil: it did not start), in the members' order: the
// k-th start of a name is the k-th member of that name.
func (t *Team) starts(w *session.Waiting) ([]*event.SpawnSessionStart, error) {
	out := make([]*event.SpawnSessionStart, len(t.cfg.Members))
	used := make([]bool, len(w.Started))
	for i, name := range t.cfg.Members {
		for j := range w.Started {
			if s := &w.Started[j]; !used[j] && s.ToolCallID == "" && s.SourceName == name {
				used[j], out[i] = true, s
				break
			}
		}
	}
	for j, s := range w.Started {
		if !used[j] && s.ToolCallID == "" {
			return nil, fmt.Errorf("team %s started %s (session %s), which is no member of it now", t.cfg.Name, s.SourceName, s.ChildSessionID)
		}
	}
	return out, nil
}

// continueRun goes on with the team's run from its members: a member
// that ended keeps its result, one that waits goes on
// (spawn.ContinueChild), one that never started could not (parallel), or
// runs now when the chain reaches it (sequential); then the team ends as
// its run would have.
func (t *Team) continueRun(ctx context.Context, inv *spawn.Invocation, c *spawn.Continuation) spawn.Result {
	starts, err := t.starts(c.Waiting)
	if err != nil {
		return spawn.Result{StopReason: event.StopError, Err: err}
	}
	member := func(ctx context.Context, i int, input string) memberResult {
		name, s := t.cfg.Members[i], starts[i]
		switch {
		case s == nil && t.cfg.Mode == Parallel:
			return memberResult{name: name, err: errors.New("it did not start before the team's process stopped")}
		case s == nil:
			return t.spawnMember(ctx, inv, nil, name, input)
		}
		if end, ok := c.Waiting.Ends[s.ChildSessionID]; ok {
			return endedMember(name, end)
		}
		k := c.Children[s.ChildSessionID]
		if k == nil {
			// Neither ended nor waiting (CloseRest ends every other one).
			return memberResult{name: name, err: errors.New(session.InterruptedResult)}
		}
		child, err := spawn.ContinueChild(ctx, inv, k)
		r := child.Result
		return memberResult{name: name, child: child, err: err, failed: err == nil && r.StopReason != event.StopCompleted && r.StopReason != event.StopMaxTokens}
	}
	if t.cfg.Mode == Parallel {
		results := make([]memberResult, len(t.cfg.Members))
		spawn.Parallel(ctx, inv, len(results), func(ctx context.Context, i int) { results[i] = member(ctx, i, "") })
		return t.parallelResult(ctx, results)
	}
	return t.chain(ctx, t.storedPrompt(ctx, inv, starts), member)
}

// endedMember is the result of a member whose end the log has.
func endedMember(name string, end event.SpawnSessionEnd) memberResult {
	r := spawn.Result{Output: end.LastAssistantMessage, StopReason: end.StopReason}
	if end.Error != "" {
		r.Err = errors.New(end.Error)
	}
	return memberResult{name: name, child: spawn.Child{SessionID: end.ChildSessionID, Result: r},
		failed: r.StopReason != event.StopCompleted && r.StopReason != event.StopMaxTokens}
}

// storedPrompt is the prompt the team's run was given, which a chain
// whose members all failed so far gives the next one: the first
// member's, as its session stored it (without the shared prompt), else
// as its start's metadata has it (cut to 200 bytes).
func (t *Team) storedPrompt(ctx context.Context, inv *spawn.Invocation, starts []*event.SpawnSessionStart) string {
	first := starts[0]
	if first == nil {
		return ""
	}
	if st := inv.Runtime.Store(); st != nil {
		if msgs, err := st.Messages(ctx, first.ChildSessionID); err == nil {
			for _, m := range msgs {
				if m.Role == model.RoleUser && !m.Synthetic {
					p := m.Text()
					if t.cfg.SharedPrompt != "" {
						p = strings.TrimPrefix(p, t.cfg.SharedPrompt+"\n\n")
					}
					return p
				}
			}
		}
	}
	p, _ := first.Metadata["prompt"].(string)
	return p
}
