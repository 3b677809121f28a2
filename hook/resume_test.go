package hook_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// A request stored by a run that stopped is asked again with its id
// (ResumeApproval): the broker shows it as it was, the answer is stored
// in the session's log (approval_replied; the request is not stored a
// second time) and decides as a live answer does. A broker asks one id
// once.
func TestResumeApproval(t *testing.T) {
	for _, c := range []struct {
		reply  approval.Reply
		action string
		reason string
	}{
		{approval.AllowOnce, agent.ToolAllow, ""},
		{approval.RejectOnce, agent.ToolDeny, "approval rejected: rejected by the user in tui: not that file"},
	} {
		t.Run(string(c.reply), func(t *testing.T) {
			reg := hook.New(hook.Options{})
			b, err := approval.New(approval.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer reg.UseBroker(b)()
			shown := make(chan approval.Request, 1)
			detach := b.Attach("tui", func(n approval.Notice) {
				if n.Kind == approval.Asked {
					shown <- n.Request
					_ = b.Reply(n.Request.ID, c.reply, "not that file", "tui")
				}
			})
			defer detach()
			sink, events := eventtest.Collect()
			ctx := spawn.WithInvocation(context.Background(), &spawn.Invocation{Session: session.Session{ID: "ses_w"}, Sink: sink})
			info := agent.ToolInfo{Agent: "writer", SessionID: "ses_w", ToolName: "Write", CallID: "cal_1", Input: json.RawMessage(`{"file_path":"a.md"}`)}
			stored := approval.Request{ID: "per_stored", SessionID: "ses_w", Tool: "Write", CallID: "cal_1", Rule: "the tool_approval policy of agent writer asks before Write"}
			d := reg.ResumeApproval(ctx, info, stored)
			if d.Action != c.action || d.Reason != c.reason {
				t.Errorf("decision %+v, want %s %q", d, c.action, c.reason)
			}
			if c.action == agent.ToolAllow && string(d.UpdatedInput) != `{"file_path":"a.md"}` {
				t.Errorf("the input to run: %s", d.UpdatedInput)
			}
			got := <-shown
			if got.ID != "per_stored" || got.Rule != stored.Rule || got.Title != "Write a.md" || got.Agent != "writer" {
				t.Errorf("shown %+v", got)
			}
			var requested, replied []string
			for _, e := range events() {
				if _, ok, _ := approval.ParseRequested(e); ok {
					requested = append(requested, "again")
				}
				if a, ok, _ := approval.ParseReplied(e); ok {
					replied = append(replied, a.RequestID+":"+string(a.Reply)+":"+a.By)
				}
			}
			if len(requested) != 0 || len(replied) != 1 || replied[0] != "per_stored:"+string(c.reply)+":tui" {
				t.Errorf("stored: %d requests, replies %v", len(requested), replied)
			}
			if again := reg.ResumeApproval(ctx, info, stored); again.Action != agent.ToolDeny {
				t.Errorf("the same request asked again in one broker: %+v, want a denial", again)
			}
		})
	}
}
