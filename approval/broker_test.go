package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/approval"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newBroker(t *testing.T, opts approval.Options) *approval.Broker {
	t.Helper()
	b, err := approval.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recorder is a front end that records every notice and signals asks.
type recorder struct {
	mu      sync.Mutex
	notices []approval.Notice
	asked   chan approval.Request
}

func attach(b *approval.Broker) (*recorder, func()) {
	r := &recorder{asked: make(chan approval.Request, 64)}
	detach := b.Attach("test", func(n approval.Notice) {
		r.mu.Lock()
		r.notices = append(r.notices, n)
		r.mu.Unlock()
		if n.Kind == approval.Asked {
			r.asked <- n.Request
		}
	})
	return r, detach
}

func (r *recorder) kinds(requestID string) []approval.Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []approval.Kind
	for _, n := range r.notices {
		if n.Request.ID == requestID {
			out = append(out, n.Kind)
		}
	}
	return out
}

type result struct {
	ans approval.Answer
	err error
}

func ask(b *approval.Broker, ctx context.Context, req approval.Request) <-chan result {
	ch := make(chan result, 1)
	go func() {
		a, err := b.Ask(ctx, req)
		ch <- result{a, err}
	}()
	return ch
}

var write = approval.Request{SessionID: "ses_child", Agent: "dev", Tool: "Write",
	Input: json.RawMessage(`{"file_path":"notes/a.md","content":"x"}`), Rule: "the tool_approval policy of agent dev asks before Write"}

func TestAskCarriesTheRequest(t *testing.T) {
	b := newBroker(t, approval.Options{})
	rec, detach := attach(b)
	defer detach()
	done := ask(b, context.Background(), write)
	got := <-rec.asked
	if !strings.HasPrefix(got.ID, "per_") || got.SessionID != "ses_child" || got.Agent != "dev" || got.Tool != "Write" {
		t.Fatalf("asked %+v", got)
	}
	if got.Title != "Write notes/a.md" {
		t.Fatalf("title %q", got.Title)
	}
	if p := b.Pending(); len(p) != 1 || p[0].ID != got.ID {
		t.Fatalf("pending %+v", p)
	}
	if err := b.Reply(got.ID, approval.AllowOnce, "", "test"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.ans.Reply != approval.AllowOnce || r.ans.By != "test" {
		t.Fatalf("answer %+v, %v", r.ans, r.err)
	}
	if p := b.Pending(); len(p) != 0 {
		t.Fatalf("still pending %+v", p)
	}
	if k := rec.kinds(got.ID); len(k) != 2 || k[0] != approval.Asked || k[1] != approval.Replied {
		t.Fatalf("notices %v", k)
	}
}

// Many front ends answer one request at once: exactly one answer wins,
// every other gets ErrAnswered, and the run sees the winner.
func TestFirstAnswerWins(t *testing.T) {
	for range 50 {
		b := newBroker(t, approval.Options{})
		rec, detach := attach(b)
		done := ask(b, context.Background(), write)
		req := <-rec.asked
		replies := []approval.Reply{approval.AllowOnce, approval.RejectOnce, approval.AllowOnce, approval.RejectOnce, approval.RejectOnce, approval.AllowOnce, approval.RejectOnce, approval.AllowOnce}
		errs := make([]error, len(replies))
		var start, wg sync.WaitGroup
		start.Add(1)
		for i, r := range replies {
			wg.Go(func() {
				start.Wait()
				errs[i] = b.Reply(req.ID, r, "", string(r))
			})
		}
		start.Done()
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("two answers won: %d and %d", won, i)
			case err == nil:
				won = i
			case !errors.Is(err, approval.ErrAnswered):
				t.Fatalf("reply %d: %v, want ErrAnswered", i, err)
			}
		}
		if won < 0 {
			t.Fatal("no answer won")
		}
		r := <-done
		if r.ans.Reply != replies[won] || r.ans.By != string(replies[won]) {
			t.Fatalf("the run got %+v, the winner was %s", r.ans, replies[won])
		}
		if k := rec.kinds(req.ID); len(k) != 2 {
			t.Fatalf("notices %v, want asked and one replied", k)
		}
		detach()
	}
}

func TestReplyErrors(t *testing.T) {
	b := newBroker(t, approval.Options{})
	if err := b.Reply("per_nope", approval.AllowOnce, "", "test"); !errors.Is(err, approval.ErrUnknown) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := b.Reply("per_nope", "yes", "", "test"); err == nil || !strings.Contains(err.Error(), `unknown reply "yes"`) {
		t.Fatalf("bad reply: %v", err)
	}
	if _, err := approval.New(approval.Options{Unattended: approval.AllowAlways}); err == nil {
		t.Fatal("an always default was accepted")
	}
	if a, err := b.Ask(context.Background(), approval.Request{Tool: "Write"}); err == nil || a.Reply.Allows() {
		t.Fatalf("a request without a session: %+v, %v", a, err)
	}
}

// "Always" becomes a rule: the next request of that agent and tool is
// answered without asking; another tool or agent still asks.
func TestAlwaysBecomesARule(t *testing.T) {
	for _, reply := range []approval.Reply{approval.AllowAlways, approval.RejectAlways} {
		t.Run(string(reply), func(t *testing.T) {
			b := newBroker(t, approval.Options{})
			rec, detach := attach(b)
			defer detach()
			done := ask(b, context.Background(), write)
			req := <-rec.asked
			if err := b.Reply(req.ID, reply, "", "test"); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.ans.Reply != reply {
				t.Fatalf("first answer %+v", r.ans)
			}
			next := write
			next.SessionID = "ses_other"
			a, err := b.Ask(context.Background(), next)
			if err != nil || a.Reply != reply || a.By != approval.ByRule {
				t.Fatalf("next request: %+v, %v", a, err)
			}
			rules := b.Rules()
			if len(rules) != 1 || rules[0].Agent != "dev" || rules[0].Tool != "Write" || rules[0].Reply != reply {
				t.Fatalf("rules %+v", rules)
			}
			// Another tool still asks.
			other := write
			other.Tool = "Bash"
			done = ask(b, context.Background(), other)
			req = <-rec.asked
			if req.Tool != "Bash" {
				t.Fatalf("asked %+v", req)
			}
			if err := b.Reply(req.ID, approval.RejectOnce, "not now", "test"); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.ans.Reply != approval.RejectOnce || r.ans.Message != "not now" {
				t.Fatalf("Bash answer %+v", r.ans)
			}
		})
	}
}

// An "always" answer also settles what already waits for the same agent
// and tool.
func TestAlwaysSettlesTheOthersWaiting(t *testing.T) {
	b := newBroker(t, approval.Options{})
	rec, detach := attach(b)
	defer detach()
	first := ask(b, context.Background(), write)
	r1 := <-rec.asked
	second := ask(b, context.Background(), write)
	<-rec.asked
	if err := b.Reply(r1.ID, approval.AllowAlways, "", "test"); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.ans.By != "test" {
		t.Fatalf("first %+v", r.ans)
	}
	if r := <-second; r.ans.Reply != approval.AllowAlways || r.ans.By != approval.ByRule {
		t.Fatalf("second %+v", r.ans)
	}
	if p := b.Pending(); len(p) != 0 {
		t.Fatalf("pending %+v", p)
	}
}

func TestTimeoutGivesTheDefault(t *testing.T) {
	for _, def := range []approval.Reply{"", approval.AllowOnce} {
		synctest.Test(t, func(t *testing.T) {
			b := newBroker(t, approval.Options{Timeout: time.Minute, TimeoutReply: def})
			rec, detach := attach(b)
			defer detach()
			start := time.Now()
			a, err := b.Ask(context.Background(), write)
			if err != nil {
				t.Fatal(err)
			}
			want := def
			if want == "" {
				want = approval.RejectOnce
			}
			if a.Reply != want || a.By != approval.ByTimeout || time.Since(start) != time.Minute {
				t.Fatalf("answer %+v after %v", a, time.Since(start))
			}
			req := <-rec.asked
			if k := rec.kinds(req.ID); len(k) != 2 || k[1] != approval.Replied {
				t.Fatalf("notices %v", k)
			}
			if err := b.Reply(req.ID, approval.AllowOnce, "", "late"); !errors.Is(err, approval.ErrAnswered) {
				t.Fatalf("late reply: %v", err)
			}
		})
	}
}

// The run's context ends: the request is withdrawn, subscribers are told,
// a late reply gets ErrAnswered.
func TestCancelWithdraws(t *testing.T) {
	b := newBroker(t, approval.Options{})
	rec, detach := attach(b)
	defer detach()
	watched := make(chan approval.Notice, 4)
	unsub := b.Subscribe(func(n approval.Notice) { watched <- n })
	defer unsub()
	ctx, cancel := context.WithCancelCause(context.Background())
	done := ask(b, ctx, write)
	req := <-rec.asked
	cause := errors.New("the user aborted the run")
	cancel(cause)
	r := <-done
	if !errors.Is(r.err, cause) || r.ans.Reply.Allows() || r.ans.By != approval.ByCancelled {
		t.Fatalf("answer %+v, %v", r.ans, r.err)
	}
	if p := b.Pending(); len(p) != 0 {
		t.Fatalf("still pending %+v", p)
	}
	if k := rec.kinds(req.ID); len(k) != 2 || k[1] != approval.Cancelled {
		t.Fatalf("front end's notices %v", k)
	}
	if n := <-watched; n.Kind != approval.Asked {
		t.Fatalf("watcher first got %v", n.Kind)
	}
	if n := <-watched; n.Kind != approval.Cancelled || n.Request.ID != req.ID {
		t.Fatalf("watcher then got %+v", n)
	}
	if err := b.Reply(req.ID, approval.AllowOnce, "", "late"); !errors.Is(err, approval.ErrAnswered) {
		t.Fatalf("late reply: %v", err)
	}
}

// Nobody attached: no request is kept, the run gets the default with a
// message naming the rule; a watcher alone does not count as attached.
func TestUnattended(t *testing.T) {
	b := newBroker(t, approval.Options{})
	unsub := b.Subscribe(func(approval.Notice) { t.Error("a notice without a request") })
	defer unsub()
	a, err := b.Ask(context.Background(), write)
	if err != nil || a.Reply != approval.RejectOnce || a.By != approval.ByUnattended {
		t.Fatalf("answer %+v, %v", a, err)
	}
	for _, want := range []string{"Write needs approval", write.Rule, "no front end is attached", "tool_approval: {Write: allow} on agent dev"} {
		if !strings.Contains(a.Message, want) {
			t.Errorf("message %q lacks %q", a.Message, want)
		}
	}
	_, detach := attach(b)
	detach()
	if b.Attached() {
		t.Fatal("still attached after detach")
	}
}

// A subscriber may answer from inside its notice (no lock is held), and
// notices keep their order: asked before replied.
func TestSubscriberRepliesInline(t *testing.T) {
	b := newBroker(t, approval.Options{})
	var mu sync.Mutex
	var seen []approval.Kind
	detach := b.Attach("inline", func(n approval.Notice) {
		mu.Lock()
		seen = append(seen, n.Kind)
		mu.Unlock()
		if n.Kind == approval.Asked {
			if err := b.Reply(n.Request.ID, approval.AllowOnce, "", "inline"); err != nil {
				t.Error(err)
			}
			if len(b.Pending()) != 0 {
				t.Error("answered request still pending")
			}
		}
	})
	defer detach()
	a, err := b.Ask(context.Background(), write)
	if err != nil || a.Reply != approval.AllowOnce {
		t.Fatalf("answer %+v, %v", a, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != approval.Asked || seen[1] != approval.Replied {
		t.Fatalf("order %v", seen)
	}
}

// A panicking subscriber is skipped; the others still get the notice.
func TestPanickingSubscriber(t *testing.T) {
	b := newBroker(t, approval.Options{})
	unsub := b.Subscribe(func(approval.Notice) { panic("boom") })
	defer unsub()
	rec, detach := attach(b)
	defer detach()
	done := ask(b, context.Background(), write)
	req := <-rec.asked
	if err := b.Reply(req.ID, approval.RejectOnce, "", "test"); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.ans.Reply != approval.RejectOnce {
		t.Fatalf("answer %+v", r.ans)
	}
}

func TestTitle(t *testing.T) {
	for _, c := range []struct{ tool, in, want string }{
		{"Bash", `{"command":"ls  -la\n/tmp"}`, "Bash ls -la /tmp"},
		{"WebFetch", `{"url":"https://example.com"}`, "WebFetch https://example.com"},
		{"task", `{"prompt":"x"}`, "task"},
		{"odd", `not json`, "odd"},
	} {
		if got := approval.Title(c.tool, json.RawMessage(c.in)); got != c.want {
			t.Errorf("Title(%s, %s) = %q, want %q", c.tool, c.in, got, c.want)
		}
	}
}
