package approval_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/approval"
)

// toolRules is a RuleStore whose rules name a tool for every agent, as a
// Claude Code settings file does. It calls back into the broker from Match
// and Save: were the broker to call it under its lock, the test would
// deadlock.
type toolRules struct {
	b *approval.Broker

	mu      sync.Mutex
	replies map[string]approval.Reply // tool -> standing answer
	saved   []approval.Rule
	fail    error
}

func (s *toolRules) Match(req approval.Request) (approval.Answer, bool) {
	_ = s.b.Pending() // takes the broker's lock
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.replies[req.Tool]
	if !ok {
		return approval.Answer{}, false
	}
	return approval.Answer{Reply: r, By: approval.ByRule, Message: "stored rule for " + req.Tool}, true
}

func (s *toolRules) Save(r approval.Rule) error {
	_ = s.b.Rules() // takes the broker's lock
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.saved = append(s.saved, r)
	s.replies[r.Tool] = r.Reply
	return nil
}

func newStoreBroker(t *testing.T, log *slog.Logger) (*approval.Broker, *toolRules) {
	t.Helper()
	s := &toolRules{replies: map[string]approval.Reply{}}
	b := newBroker(t, approval.Options{Rules: s, Logger: log})
	s.b = b
	return b, s
}

// A stored rule answers before anyone is asked, even with nobody attached.
func TestStoredRuleAnswersFirst(t *testing.T) {
	b, s := newStoreBroker(t, nil)
	s.replies["Write"] = approval.RejectAlways
	a, err := b.Ask(context.Background(), write)
	if err != nil || a.Reply != approval.RejectAlways || a.By != approval.ByRule || a.Message != "stored rule for Write" {
		t.Fatalf("unattended, stored deny: %+v, %v", a, err)
	}
	rec, detach := attach(b)
	defer detach()
	s.mu.Lock()
	s.replies["Write"] = approval.AllowAlways
	s.mu.Unlock()
	if a, _ := b.Ask(context.Background(), write); a.Reply != approval.AllowAlways || a.By != approval.ByRule {
		t.Fatalf("attached, stored allow: %+v", a)
	}
	if len(rec.asked) != 0 || len(s.saved) != 0 {
		t.Fatalf("a stored rule's answer asked a front end or was saved again: %d asked, %+v", len(rec.asked), s.saved)
	}
}

// A front end's "always" answer is saved once, as the agent's rule; what
// the store then covers (another agent's request for the tool) is
// answered by it, what it does not cover keeps waiting.
func TestAlwaysIsSaved(t *testing.T) {
	b, s := newStoreBroker(t, nil)
	rec, detach := attach(b)
	defer detach()
	first := ask(b, context.Background(), write)
	r1 := <-rec.asked
	other := write
	other.Agent, other.SessionID = "coder", "ses_coder"
	second := ask(b, context.Background(), other)
	<-rec.asked
	bash := write
	bash.Tool = "Bash"
	third := ask(b, context.Background(), bash)
	r3 := <-rec.asked

	if err := b.Reply(r1.ID, approval.AllowAlways, "", "test"); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.ans.Reply != approval.AllowAlways || r.ans.By != "test" {
		t.Fatalf("first %+v", r.ans)
	}
	if r := <-second; r.ans.Reply != approval.AllowAlways || r.ans.By != approval.ByRule || r.ans.Message != "stored rule for Write" {
		t.Fatalf("another agent's Write %+v", r.ans)
	}
	if p := b.Pending(); len(p) != 1 || p[0].ID != r3.ID {
		t.Fatalf("pending %+v, want only the Bash request", p)
	}
	if len(s.saved) != 1 || s.saved[0].Agent != "dev" || s.saved[0].Tool != "Write" || s.saved[0].Reply != approval.AllowAlways {
		t.Fatalf("saved %+v", s.saved)
	}
	if err := b.Reply(r3.ID, approval.RejectOnce, "", "test"); err != nil {
		t.Fatal(err)
	}
	<-third
	if len(s.saved) != 1 {
		t.Fatalf("a once answer was saved: %+v", s.saved)
	}
}

// A rule that cannot be saved is logged; the answer stands and the rule
// holds in memory.
func TestSaveFailureIsLogged(t *testing.T) {
	var logged bytes.Buffer
	b, s := newStoreBroker(t, slog.New(slog.NewTextHandler(&logged, nil)))
	s.fail = errors.New("disk full")
	rec, detach := attach(b)
	defer detach()
	done := ask(b, context.Background(), write)
	req := <-rec.asked
	if err := b.Reply(req.ID, approval.RejectAlways, "", "test"); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.ans.Reply != approval.RejectAlways {
		t.Fatalf("answer %+v", r.ans)
	}
	if !strings.Contains(logged.String(), "was not saved") || !strings.Contains(logged.String(), "disk full") {
		t.Fatalf("log %q", logged.String())
	}
	if a, _ := b.Ask(context.Background(), write); a.Reply != approval.RejectAlways || a.By != approval.ByRule {
		t.Fatalf("the in-memory rule: %+v", a)
	}
}

// Unattended allow says it allowed, not how to allow.
func TestUnattendedAllowMessage(t *testing.T) {
	b := newBroker(t, approval.Options{Unattended: approval.AllowOnce})
	a, err := b.Ask(context.Background(), write)
	if err != nil || a.Reply != approval.AllowOnce || a.By != approval.ByUnattended || !strings.Contains(a.Message, "Write allowed without asking") {
		t.Fatalf("%+v, %v", a, err)
	}
}
