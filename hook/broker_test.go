package hook_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/spawn"
)

// A child's tool that its policy asks about goes to the broker with the
// child's own session id; the front end's answer decides, and the
// rejection reaches the child's model.
func TestUseBrokerAsksForTheChild(t *testing.T) {
	for _, c := range []struct {
		reply approval.Reply
		ran   bool
		seen  string // in the child's next request
	}{
		{approval.AllowOnce, true, "probe ran with"},
		{approval.RejectOnce, false, "approval rejected: rejected by the user in tui: not that file"},
	} {
		t.Run(string(c.reply), func(t *testing.T) {
			reg := hook.New(hook.Options{})
			b, err := approval.New(approval.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer reg.UseBroker(b)()
			h := newHarness(t, reg, spawn.Limits{})
			pr := &probe{name: "probe"}
			child := scripted(t, callTurn("probe", map[string]any{"path": "a.md"}), text("child done"))
			h.agent("child", child, pr)
			h.agent("parent", scripted(t, callTurn("task", map[string]any{"agent_or_team": "child", "prompt": "x"}), text("parent done")), spawn.SubagentTools()...)
			reg.Approvals.Set("child", map[string]string{"probe": "ask"})
			var childSession string
			reg.OnSubagentStart.Register(func(_ context.Context, s hook.SubagentStart) error {
				childSession = s.ID
				return nil
			})
			asked := make(chan approval.Request, 1)
			detach := b.Attach("tui", func(n approval.Notice) {
				if n.Kind == approval.Asked {
					asked <- n.Request
				}
			})
			defer detach()
			go func() {
				req := <-asked
				if err := b.Reply(req.ID, c.reply, "not that file", "tui"); err != nil {
					t.Error(err)
				}
				asked <- req
			}()
			_, root, _ := h.run(context.Background(), "parent", "go")
			req := <-asked
			if req.SessionID == root || req.SessionID != childSession || req.Agent != "child" || req.Tool != "probe" ||
				!strings.Contains(req.Rule, "tool_approval policy of agent child") || req.Title != "probe a.md" {
				t.Fatalf("asked %+v (root %s, child %s)", req, root, childSession)
			}
			if ran := len(pr.ran()) == 1; ran != c.ran {
				t.Fatalf("the tool ran: %v", ran)
			}
			reqs := child.requests()
			if last := texts(reqs[len(reqs)-1]); !strings.Contains(last, c.seen) {
				t.Fatalf("the child's model saw %q, want %q", last, c.seen)
			}
			// The request and its answer are in the child's log, for a
			// process that reads the store (docs/approvals.md, Durable).
			recs, err := h.store.Events(context.Background(), childSession, 0)
			if err != nil {
				t.Fatal(err)
			}
			var logged []string
			for _, r := range recs {
				if q, ok, err := approval.ParseRequested(r.Event); ok && err == nil {
					logged = append(logged, "requested:"+q.ID+":"+q.Title)
				}
				if a, ok, err := approval.ParseReplied(r.Event); ok && err == nil {
					logged = append(logged, "replied:"+a.RequestID+":"+string(a.Reply)+":"+a.By)
				}
			}
			want := "requested:" + req.ID + ":probe a.md,replied:" + req.ID + ":" + string(c.reply) + ":tui"
			if got := strings.Join(logged, ","); got != want {
				t.Errorf("the child's log has %s\nwant %s", got, want)
			}
		})
	}
}

// With no front end attached the tool is refused at once, and the model
// is told which rule asked and how to allow the tool.
func TestUseBrokerUnattended(t *testing.T) {
	reg := hook.New(hook.Options{})
	b, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.UseBroker(b)()
	h := newHarness(t, reg, spawn.Limits{})
	pr := &probe{name: "probe"}
	m := scripted(t, callTurn("probe", map[string]any{}), text("done"))
	h.agent("main", m, pr)
	reg.Approvals.Set("main", map[string]string{"probe": "ask"})
	h.run(context.Background(), "main", "go")
	if len(pr.ran()) != 0 {
		t.Fatal("the tool ran")
	}
	reqs := m.requests()
	last := texts(reqs[len(reqs)-1])
	for _, want := range []string{"approval unavailable", "the tool_approval policy of agent main asks before probe", "no front end is attached", "tool_approval: {probe: allow} on agent main"} {
		if !strings.Contains(last, want) {
			t.Errorf("the model saw %q, lacking %q", last, want)
		}
	}
}
