package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/approval"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader, which
// tells waitFor when it grew.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	more chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.more != nil {
		select {
		case s.more <- struct{}{}:
		default:
		}
	}
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// waitFor waits until the buffer holds want n times.
func (s *syncBuffer) waitFor(want string, n int) {
	for strings.Count(s.String(), want) < n {
		<-s.more
	}
}

// heldLock counts how often the live view's lock was taken.
type heldLock struct {
	mu    sync.Mutex
	count int
}

func (l *heldLock) Lock()   { l.mu.Lock(); l.count++ }
func (l *heldLock) Unlock() { l.mu.Unlock() }

// TestTerminalApprovals drives the terminal front end with a real broker:
// y, a and n become the three answers, an unknown answer asks again, a
// request settled elsewhere ends its question, and a closed terminal
// rejects.
func TestTerminalApprovals(t *testing.T) {
	b, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, feed := io.Pipe()
	defer feed.Close()
	out := &syncBuffer{more: make(chan struct{}, 1)}
	view := &heldLock{}
	path := func(r approval.Request) string { return "lead › " + r.Agent }
	term := startTerminalApprovals(b, readLines(in), &approvalPrinter{w: out, view: view}, path, ".claude/settings.local.json")
	defer term.Close()
	ask := func(agent, tool, input string) <-chan approval.Answer {
		ch := make(chan approval.Answer, 1)
		go func() {
			a, _ := b.Ask(context.Background(), approval.Request{SessionID: "ses_" + agent, Agent: agent, Tool: tool, Input: json.RawMessage(input)})
			ch <- a
		}()
		return ch
	}
	prompt := answerPrompt
	typed := func(s string) { io.WriteString(feed, s+"\n") }

	done := ask("writer", "Bash", `{"command":"make test","description":"run the tests"}`)
	out.waitFor(prompt, 1)
	typed("maybe")
	out.waitFor(prompt, 2)
	typed("y")
	if a := <-done; a.Reply != approval.AllowOnce || a.By != "the terminal" {
		t.Errorf("y: %+v", a)
	}
	s := out.String()
	if !strings.Contains(s, "? lead › writer wants to run Bash make test\n    command: make test\n    description: run the tests\n") {
		t.Errorf("question %q", s)
	}

	done = ask("writer", "Write", `{"file_path":"notes/a.md","content":"one\ntwo\n"}`)
	out.waitFor(prompt, 3)
	typed("n  write to notes/b.md instead ")
	if a := <-done; a.Reply != approval.RejectOnce || a.Message != "write to notes/b.md instead" {
		t.Errorf("n with a reason: %+v", a)
	}
	if !strings.Contains(out.String(), "    content: (2 lines)\n      │ one\n      │ two\n") {
		t.Errorf("content not shown line by line: %q", out.String())
	}

	done = ask("writer", "Edit", `{}`)
	out.waitFor(prompt, 4)
	typed("always")
	if a := <-done; a.Reply != approval.AllowAlways {
		t.Errorf("always: %+v", a)
	}
	out.waitFor("Edit is allowed from now on, for every agent (permissions.allow of .claude/settings.local.json)", 1)
	if a := <-ask("writer", "Edit", `{}`); a.Reply != approval.AllowAlways || a.By != approval.ByRule {
		t.Errorf("always should not ask again: %+v", a)
	}

	done = ask("writer", "WebFetch", `{"url":"http://example.test/"}`)
	out.waitFor(prompt, 5)
	typed("D")
	if a := <-done; a.Reply != approval.RejectAlways {
		t.Errorf("d: %+v", a)
	}
	out.waitFor("WebFetch is denied from now on, for every agent (permissions.deny of .claude/settings.local.json)", 1)
	if a := <-ask("writer", "WebFetch", `{}`); a.Reply != approval.RejectAlways || a.By != approval.ByRule {
		t.Errorf("deny always should not ask again: %+v", a)
	}

	// Two requests at once: one question at a time; cancelling the second
	// while the first is asked takes it off the queue.
	asked := make(chan string, 8)
	unsubscribe := b.Subscribe(func(n approval.Notice) {
		if n.Kind == approval.Asked {
			asked <- n.Request.Agent
		}
	})
	defer unsubscribe()
	first := ask("coder", "Bash", `{"command":"ls"}`)
	out.waitFor(prompt, 6)
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan approval.Answer, 1)
	go func() {
		a, _ := b.Ask(ctx, approval.Request{SessionID: "ses_x", Agent: "x", Tool: "Bash"})
		second <- a
	}()
	for <-asked != "x" {
	}
	cancel()
	if a := <-second; a.By != approval.ByCancelled {
		t.Errorf("cancelled: %+v", a)
	}
	typed("y")
	<-first
	if strings.Count(out.String(), prompt) != 6 {
		t.Errorf("the cancelled request was asked about: %q", out.String())
	}

	// A closed terminal rejects, saying so.
	done = ask("writer", "Glob", `{"pattern":"*.md"}`)
	out.waitFor(prompt, 7)
	feed.Close()
	if a := <-done; a.Reply != approval.RejectOnce || a.Message != "the terminal closed before an answer" {
		t.Errorf("closed terminal: %+v", a)
	}
	term.Close()
	if view.count != 6 {
		t.Errorf("the view's lock was taken %d times for 6 questions", view.count)
	}
	if b.Attached() {
		t.Error("still attached after Close")
	}
}

// A question ends when the broker settles its request (the timeout).
func TestTerminalQuestionSettledElsewhere(t *testing.T) {
	b, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, feed := io.Pipe()
	defer feed.Close()
	out := &syncBuffer{more: make(chan struct{}, 1)}
	term := startTerminalApprovals(b, readLines(in), &approvalPrinter{w: out}, func(r approval.Request) string { return r.Agent }, "x")
	defer term.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan approval.Answer, 1)
	go func() {
		a, _ := b.Ask(ctx, approval.Request{SessionID: "s", Agent: "dev", Tool: "Bash"})
		done <- a
	}()
	out.waitFor(answerPrompt, 1)
	cancel()
	<-done
	out.waitFor("(the run was cancelled)", 1)
}

func TestDescribeInput(t *testing.T) {
	long := strings.Repeat("x", 300)
	lines := strings.Repeat("l\n", 20)
	in, _ := json.Marshal(map[string]any{"file_path": "a.md", "content": lines, "n": 3, "note": long})
	got := describeInput(in, "  ")
	for _, want := range []string{"  file_path: a.md\n  content: (20 lines)\n", "    │ l\n", "    … 8 more lines\n", "  n: 3\n", "  note: " + strings.Repeat("x", 200) + "…\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if got := describeInput(json.RawMessage(`"just text"`), "  "); got != "  \"just text\"\n" {
		t.Errorf("not an object: %q", got)
	}
	if got := describeInput(nil, "  "); got != "" {
		t.Errorf("no input: %q", got)
	}
}
